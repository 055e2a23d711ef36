"""Streamlit-side helpers shared by app.py and pages/ (the engine stays UI-free)."""
