"""kaito-aks: Pulumi components that serve open models on Kubernetes with KAITO."""
