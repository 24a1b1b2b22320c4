"""The kaito-aks component provider: the components whose args are typed for every Pulumi
language (KaitoModel, KaitoOperator), served to TypeScript, Go, YAML, ... programs.

    python -m kaito_aks.provider   (what provider/PulumiPlugin.yaml runs)

The schema (type tokens `kaito-aks:index:KaitoModel`, ...) is read from the args' TypedDicts.
"""

from pulumi.provider.experimental import component_provider_host

from kaito_aks import __version__
from kaito_aks.model.component import KaitoModel
from kaito_aks.operators.kaito_operator import KaitoOperator

PACKAGE = "kaito-aks"


def main() -> None:
    component_provider_host(components=[KaitoModel, KaitoOperator], name=PACKAGE, version=__version__)


if __name__ == "__main__":
    main()
