"""Readers of standard result formats, turning them into evalstore's columns."""
