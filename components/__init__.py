"""One Pulumi ComponentResource per real-world thing kaito-aks deploys."""
