"""Evaluating flows on datasets: datasets, metrics, batch runs (local and Ray), generated tasks."""
