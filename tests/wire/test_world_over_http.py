"""HTTP-backed tools meet the same world: a write over HTTP is what a read over HTTP finds."""

from __future__ import annotations

import httpx
from toolchaos import policies, wire
from toolchaos.fake_tools import catalogue


def test_a_write_over_http_is_read_back_and_a_missing_record_is_a_404() -> None:
    seen: list[tuple[int, object]] = []

    def agent(task: str) -> str:
        with httpx.Client() as client:
            for rid in ("rec_1", "rec_2"):
                r = client.get(f"https://records.test/records/{rid}")
                seen.append((r.status_code, r.json()))
            client.post("https://records.test/records/rec_2", json={"data": {"status": "new"}})
            r = client.get("https://records.test/records/rec_2")
            seen.append((r.status_code, r.json()))
        return "done"

    routes = [wire.http_tool("read_record", "GET https://records.test/records/{record_id}"),
              wire.http_tool("write_record", "POST https://records.test/records/{record_id}")]
    result = wire.run(agent, task="t", tools=[catalogue.get("read_record"), catalogue.get("write_record")],
                      policy=policies.scripted([]), http_tools=routes,
                      world={"records": {"rec_1": {"record_id": "rec_1", "data": {"status": "old"}}}})
    assert result.harness_stop is None, result.error
    assert [s for s, _ in seen] == [200, 404, 200]
    assert seen[0][1] == {"record_id": "rec_1", "data": {"status": "old"}}
    assert seen[2][1]["data"] == {"status": "new"}
    assert [r["record_id"] for r in result.world.records("records")] == ["rec_1", "rec_2"]
