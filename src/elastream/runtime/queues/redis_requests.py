"""The one atomic request of the Redis queue store: what a step writes (`Request`), in its wire
form, and the Lua scripts that apply it (`APPLY`: guards first, then every write) or drop what a
consumer committed (`DROP_CONSUMED`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgpack

from elastream.model.batch import EventBatch
from elastream.runtime.queues.segments import (
    encode_batch,
    pack_roots,
)

# One atomic request (ARGV[1] = key prefix, ARGV[2] = the msgpack request, see `Request`):
# guards first (the share's done mark, the producer's count, every target queue's room), then
# the writes. A guard that fails returns its reason and writes nothing.
APPLY = """
local P = ARGV[1]
local req = cmsgpack.unpack(ARGV[2])
local mark = req.mark
if mark and redis.call('HEXISTS', P .. 'done:' .. mark.op, mark.field) == 1 then
  return {'done'}
end
local prod = req.producer
if prod then
  local offered = tonumber(redis.call('HGET', P .. 'prod:' .. prod.q, prod.name) or '0')
  if offered ~= prod.expect then return {'offered', offered} end
end
local states, rooms, short = {}, {}, false
for i, a in ipairs(req.appends) do
  local st = redis.call('HMGET', P .. 'q:' .. a.q, 'next', 'done', 'bound')
  if not st[1] then return {'unknown', a.q} end
  local nxt = tonumber(st[1])
  local room = a.n
  if st[3] and st[3] ~= '' then
    room = math.max(0, tonumber(st[3]) - (nxt - tonumber(st[2])))
  end
  states[i] = nxt
  rooms[i] = room
  if math.min(room, a.n) ~= a.acc then short = true end
end
if short then return {'room', unpack(rooms)} end
for i, a in ipairs(req.appends) do
  local nxt = states[i]
  if a.acc > 0 then
    local stop = nxt + a.acc
    redis.call('XADD', P .. 's:' .. a.q, string.format('%d-0', stop),
      'first', string.format('%d', nxt), 'enq', req.now, 'keys', a.keys, 'body', a.body)
    redis.call('HSET', P .. 'q:' .. a.q, 'next', string.format('%d', stop))
  end
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('ZADD', P .. 'ap:' .. a.q, req.now, string.format('%d|%d|%d|', seq, a.acc, a.n - a.acc)
    .. a.lat .. '|' .. a.producer)
  if a.refused ~= '' then
    redis.call('ZADD', P .. 'roots:overflow', req.now, string.format('%d|', seq) .. a.refused)
  end
end
if prod then redis.call('HSET', P .. 'prod:' .. prod.q, prod.name, prod.after) end
if mark then
  redis.call('HSET', P .. 'done:' .. mark.op, mark.field, '1')
  redis.call('ZADD', P .. 'sh:' .. mark.op, req.now, mark.record)
  redis.call('HINCRBY', P .. 'q:' .. mark.op, 'done', mark.events)
end
for _, r in ipairs(req.roots) do
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('ZADD', P .. 'roots:' .. r[1], req.now, string.format('%d|', seq) .. r[2])
end
for _, f in ipairs(req.failures) do redis.call('HSETNX', P .. 'err:' .. f[1], f[2], f[3]) end
for _, w in ipairs(req.puts) do
  redis.call('HSET', P .. 'st:' .. w[1] .. ':' .. w[2], w[3], w[4])
  redis.call('ZADD', P .. 'stg:' .. w[1], w[2], w[2])
end
for _, w in ipairs(req.dels) do redis.call('HDEL', P .. 'st:' .. w[1] .. ':' .. w[2], w[3]) end
return {'ok'}
"""

# Retention (ARGV: prefix, op, end): the stream's segments ending at or below `end`, and the plans
# of the batches ending there.
DROP_CONSUMED = """
local P, op, stop = ARGV[1], ARGV[2], tonumber(ARGV[3])
local n = redis.call('XTRIM', P .. 's:' .. op, 'MINID', string.format('%d-0', stop + 1))
local starts = redis.call('ZRANGEBYSCORE', P .. 'planend:' .. op, '-inf', stop)
if #starts > 0 then
  redis.call('HDEL', P .. 'plan:' .. op, unpack(starts))
  redis.call('ZREMRANGEBYSCORE', P .. 'planend:' .. op, '-inf', stop)
end
return n
"""


@dataclass
class Append:
    """One queue's part of a request: the events that should go in, and how many fit."""

    q: str
    producer: str
    events: EventBatch
    sink: bool
    accepted: int = -1  # unknown until the first try: all of them

    def wire(self, now: float) -> dict[str, Any]:
        n = len(self.events)
        acc = n if self.accepted < 0 else self.accepted
        accepted = self.events.slice(0, acc)
        keys, body = encode_batch(accepted) if acc else (b"", b"")
        latency = float((now - accepted.ts).sum()) if self.sink else 0.0
        return {
            "q": self.q,
            "producer": self.producer,
            "n": n,
            "acc": acc,
            "keys": keys,
            "body": body,
            "lat": repr(latency),
            "refused": pack_roots(self.events.roots[acc:]) if acc < n else b"",
        }


@dataclass
class Request:
    """Everything one atomic step writes (`APPLY`). A later write joins it as another field
    here and another loop in the script."""

    appends: list[Append] = field(default_factory=list)
    mark: dict[str, Any] | None = None  # a share's done mark and its record
    producer: dict[str, Any] | None = None  # a source's count before and after
    roots: list[tuple[str, bytes]] = field(default_factory=list)  # (fate, packed roots)
    failures: list[tuple[str, str, bytes]] = field(default_factory=list)  # (op, id, record)
    puts: list[tuple[str, int, str, bytes]] = field(default_factory=list)  # keyed state writes
    dels: list[tuple[str, int, str]] = field(default_factory=list)  # keyed state deletes

    def wire(self, now: float) -> bytes:
        return msgpack.packb(
            {
                "now": repr(now),
                "appends": [a.wire(now) for a in self.appends],
                "mark": self.mark,
                "producer": self.producer,
                "roots": [list(r) for r in self.roots],
                "failures": [list(f) for f in self.failures],
                "puts": [list(w) for w in self.puts],
                "dels": [list(w) for w in self.dels],
            },
            use_bin_type=False,  # Redis' Lua cmsgpack knows no bin type: blobs go as raw strings
        )
