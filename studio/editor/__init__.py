"""The canvas editor's model: a flow file edited by canvas gestures, its layout, its history.

Nothing here imports Streamlit: the studio's Editor page turns canvas events into calls on
`Editor`, and shows what `canvas_graph` builds. The YAML text stays the source of truth:
every edit goes through ruamel.yaml's round-trip mode (comments and layout kept), and an
unchanged flow is written back byte for byte.
"""
