"""Floor page: a title, one metric and one 3-point Plotly chart (the marker of most pages is their first chart)."""

import plotly.graph_objects as go
import streamlit as st

st.title("Floor chart")
st.metric("Throughput", "123 req/s")
st.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2])), key="floor_chart")
