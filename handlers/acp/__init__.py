"""The Agent Client Protocol adapter: ``ds acp`` serves a quest to an editor over stdio."""
