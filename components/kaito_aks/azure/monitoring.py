"""Azure Monitor managed Prometheus for an AKS cluster this library creates: an Azure Monitor
workspace that keeps the metrics, and the data collection endpoint, rule and associations through
which the cluster's metrics add-on (ManagedCluster azureMonitorProfile.metrics) sends them there,
as Microsoft's own templates make them (Azure/prometheus-collector AddonArmTemplate and
AddonTerraformTemplate: names MSProm-<region>-<cluster>, a Linux endpoint and rule, the
Microsoft-PrometheusMetrics stream to the workspace, the endpoint associated under the name
configurationAccessEndpoint). The add-on then reads azmonitoring.coreos.com ServiceMonitors."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import monitor

STREAM = "Microsoft-PrometheusMetrics"
DESTINATION = "MonitoringAccount1"
ENDPOINT_ASSOCIATION = "configurationAccessEndpoint"  # the one name Azure takes for an endpoint's association
MAX_ENDPOINT_NAME = 44  # data collection endpoints: 3-44 characters
MAX_RULE_NAME = 64


@dataclass(frozen=True)
class ManagedPrometheus:
    workspace: monitor.AzureMonitorWorkspace
    rule: monitor.DataCollectionRule


def msprom_name(location: str, cluster: str, limit: int) -> str:
    return f"MSProm-{location}-{cluster}"[:limit]


def managed_prometheus(
    name: str,
    cluster_name: str,
    cluster_id: pulumi.Input[str],
    resource_group_name: pulumi.Input[str],
    location: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> ManagedPrometheus:
    """The workspace, endpoint, rule and the cluster's two associations (`opts`: parented to the
    cluster's component, after the cluster)."""
    workspace = monitor.AzureMonitorWorkspace(
        f"{name}-prometheus",
        azure_monitor_workspace_name=f"{cluster_name}-prometheus",
        resource_group_name=resource_group_name,
        location=location,
        tags=tags,
        opts=opts,
    )
    endpoint_name = pulumi.Output.from_input(location).apply(lambda r: msprom_name(r, cluster_name, MAX_ENDPOINT_NAME))
    rule_name = pulumi.Output.from_input(location).apply(lambda r: msprom_name(r, cluster_name, MAX_RULE_NAME))
    endpoint = monitor.DataCollectionEndpoint(
        f"{name}-prometheus-endpoint",
        data_collection_endpoint_name=endpoint_name,
        resource_group_name=resource_group_name,
        location=location,
        kind=monitor.KnownDataCollectionEndpointResourceKind.LINUX,
        tags=tags,
        opts=opts,
    )
    rule = monitor.DataCollectionRule(
        f"{name}-prometheus-rule",
        data_collection_rule_name=rule_name,
        resource_group_name=resource_group_name,
        location=location,
        kind=monitor.KnownDataCollectionRuleResourceKind.LINUX,
        data_collection_endpoint_id=endpoint.id,
        data_sources=monitor.DataCollectionRuleDataSourcesArgs(
            prometheus_forwarder=[
                monitor.PrometheusForwarderDataSourceArgs(name="PrometheusDataSource", streams=[STREAM])
            ]
        ),
        destinations=monitor.DataCollectionRuleDestinationsArgs(
            monitoring_accounts=[
                monitor.MonitoringAccountDestinationArgs(account_resource_id=workspace.id, name=DESTINATION)
            ]
        ),
        data_flows=[monitor.DataFlowArgs(streams=[STREAM], destinations=[DESTINATION])],
        tags=tags,
        opts=opts,
    )
    monitor.DataCollectionRuleAssociation(
        f"{name}-prometheus-rule-association",
        association_name=rule_name,
        resource_uri=cluster_id,
        data_collection_rule_id=rule.id,
        opts=opts,
    )
    monitor.DataCollectionRuleAssociation(
        f"{name}-prometheus-endpoint-association",
        association_name=ENDPOINT_ASSOCIATION,
        resource_uri=cluster_id,
        data_collection_endpoint_id=endpoint.id,
        opts=opts,
    )
    return ManagedPrometheus(workspace, rule)
