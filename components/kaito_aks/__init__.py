"""kaito-aks: Pulumi components that serve open models on Kubernetes with KAITO."""

__version__ = "0.1.0"
