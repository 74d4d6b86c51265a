"""The studio: a Streamlit app over one store and one folder of flows.

`flowstudio studio [DIR]` starts it (see `studio.app.server`). The engine never imports this
package; pages draw what `studio.viewer` computes.
"""

from pathlib import Path

MAIN = Path(__file__).with_name("main.py")
"""The script Streamlit runs."""
