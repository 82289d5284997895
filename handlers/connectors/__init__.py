"""Delivery to the world outside the quest: the connectors that talk over the network."""
