"""The flow file format: spec, loader, references, templates, fmt and the JSON Schema."""
