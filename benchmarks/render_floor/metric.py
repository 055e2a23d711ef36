"""Floor page: a title and one metric (the render marker of Design and Tenancy is a metric)."""

import streamlit as st

st.title("Floor")
st.metric("Throughput", "123 req/s")
