"""The script `streamlit run` executes: page setup and navigation."""

import streamlit as st

from studio.app.nav import all_pages

st.set_page_config(page_title="Flowstudio", page_icon=":material/account_tree:", layout="wide")
st.navigation(all_pages(), position="top").run()  # no sidebar: the Editor's canvas gets the width
