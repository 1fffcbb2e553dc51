"""The agents, one package each, on the shared loop of `ajax.agents.loop`."""
