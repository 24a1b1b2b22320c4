"""Serving a stack's models as one service: one OpenAI-compatible gateway with authentication at
its door (InferenceGateway: Istio with KAITO's gateway extension, body-based routing, Authorino),
a route per model to the InferencePool KAITO makes for it, replicas that follow the load
(KedaAutoscaling: KEDA and keda-kaito-scaler), and the models' metrics (ServiceMonitors, a
Grafana dashboard). Every piece pinned in catalog/serving_charts.yaml and paired with the KAITO
release in catalog/kaito_charts.yaml (`serving`)."""
