"""Importers: another tool's flow (Prompt flow, Dify DSL) → a flow file, its layout and a report.

Nothing in an imported file is ever executed: YAML goes through the safe loader, Python tool
files are only parsed (`ast`), and prompts are only read as text.
"""

from studio.importers.build import Imported, write_import
from studio.importers.detect import free_path, import_path
from studio.importers.dify import import_dify
from studio.importers.promptflow import import_promptflow
from studio.importers.promptflow_run import import_promptflow_run
from studio.importers.report import ImportReport, NodeReport

__all__ = [
    "ImportReport",
    "Imported",
    "NodeReport",
    "free_path",
    "import_dify",
    "import_path",
    "import_promptflow",
    "import_promptflow_run",
    "write_import",
]
