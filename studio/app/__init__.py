"""The studio: a Streamlit app over one store and one folder of flows.

`flowstudio studio [DIR]` starts it (see `studio.cli.launch`). The engine never imports this
package; pages draw what `studio.viewer` computes.
"""
