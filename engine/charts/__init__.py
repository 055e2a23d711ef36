"""Plotly figures, one module per page (no Streamlit here); common.py holds the shared builders."""
