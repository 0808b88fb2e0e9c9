"""Tests that need no server and no Java."""
