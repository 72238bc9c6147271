"""The loops the toolkit's tests run on."""

from __future__ import annotations

import asyncio

import uvloop

import ferroloop

LOOPS = {
    "ferroloop": ferroloop.new_event_loop,
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
