"""The synthetic judge server's batch API: ``/v1/files`` and ``/v1/batches`` as OpenAI serves them.

``POST /v1/files`` (multipart, ``purpose=batch``) stores a batch input file; ``POST /v1/batches`` creates a
batch over it; ``GET /v1/batches/{id}`` reports it; ``POST /v1/batches/{id}/cancel`` cancels it;
``GET /v1/files/{id}/content`` downloads a file (the output and error files a batch writes). A batch stays
``in_progress`` for ``batch_polls - 1`` retrievals and ends at the ``batch_polls``-th, as
``batch_mode`` says:

* ``complete`` -- every request answered (the same reply the live route gives the same body, no faults);
* ``expire`` -- the batch ``expired``: the first half of its requests (rounded up) answered, the rest in the
  error file with code ``batch_expired`` (what OpenAI writes for requests an expired batch did not reach);
* ``fail`` -- the batch ``failed`` (a validation error), no request answered.

The counters (``stats()["batches"]``) say how many files were uploaded, batches created and polls answered.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["BATCH_MODES", "BatchStore"]

BATCH_MODES: tuple[str, ...] = ("complete", "expire", "fail")


class BatchStore:
    """Files and batches of one server (mutated on its event loop only)."""

    def __init__(self, mode: str, polls: int,
                 complete: Callable[[Any, Mapping[str, Any]], tuple[int, dict[str, Any]]]) -> None:
        self.complete = complete  # the live route's reply to one chat-completions body (the server's, handed in)
        self.mode = mode
        self.polls = polls
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.counts = {"files": 0, "created": 0, "retrieved": 0, "cancelled": 0}

    # ------------------------------------------------------------------ routes

    def route(self, state: Any, method: str, path: str, headers: dict[str, str], body: bytes
              ) -> tuple[int, dict[str, Any] | bytes]:
        """The reply ``(status, JSON payload or raw bytes)`` to one request under /v1/files or /v1/batches."""
        parts = [p for p in path.split("/") if p and p != "v1"]
        kind, rest = parts[0], parts[1:]
        if kind == "files" and method == "POST" and not rest:
            return self._upload(headers, body)
        if kind == "files" and method == "GET" and len(rest) == 2 and rest[1] == "content" and rest[0] in self.files:
            return 200, self.files[rest[0]][1]
        if kind == "files" and method == "GET" and len(rest) == 1 and rest[0] in self.files:
            return 200, self.files[rest[0]][0]
        if kind == "batches" and method == "POST" and not rest:
            return self._create(body)
        if kind == "batches" and rest and rest[0] in self.batches:
            batch = self.batches[rest[0]]
            if method == "GET" and len(rest) == 1:
                return 200, self._retrieve(state, batch)
            if method == "POST" and rest[1:] == ["cancel"]:
                self.counts["cancelled"] += 1
                if batch["status"] not in ("completed", "failed", "expired"):
                    batch.update(status="cancelled", cancelled_at=int(time.time()))
                return 200, dict(batch)
        return 404, _error(404, f"No route or object {path!r}.")

    def _upload(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any] | bytes]:
        ctype = headers.get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            return 400, _error(400, "A file upload must be multipart/form-data.")
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + body)
        fields: dict[str, Any] = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
        if "file" not in fields or fields.get("purpose", (None, b""))[1] != b"batch":
            return 400, _error(400, "The upload needs a 'file' part and purpose 'batch'.")
        filename, data = fields["file"]
        return 200, self._store(str(filename or "upload.jsonl"), data, "batch")

    def _store(self, filename: str, data: bytes, purpose: str) -> dict[str, Any]:
        self.counts["files"] += 1
        file_id = f"file-{self.counts['files']:06d}-{hashlib.sha256(data).hexdigest()[:12]}"
        obj = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": filename, "purpose": purpose, "status": "processed"}
        self.files[file_id] = (obj, data)
        return obj

    def _create(self, body: bytes) -> tuple[int, dict[str, Any] | bytes]:
        try:
            req = json.loads(body or b"{}")
            input_id = req["input_file_id"]
        except (ValueError, KeyError, TypeError):
            return 400, _error(400, "The body must be JSON with 'input_file_id'.")
        if input_id not in self.files:
            return 404, _error(404, f"No file {input_id!r}.")
        self.counts["created"] += 1
        lines = [ln for ln in self.files[input_id][1].decode("utf-8").splitlines() if ln.strip()]
        batch_id = f"batch_{self.counts['created']:06d}"
        batch = {"id": batch_id, "object": "batch", "endpoint": req.get("endpoint", "/v1/chat/completions"),
                 "errors": None, "input_file_id": input_id, "completion_window": req.get("completion_window", "24h"),
                 "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                 "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                 "metadata": req.get("metadata"), "_polls": 0}
        self.batches[batch_id] = batch
        return 200, _public(batch)

    def _retrieve(self, state: Any, batch: dict[str, Any]) -> dict[str, Any]:
        self.counts["retrieved"] += 1
        batch["_polls"] += 1
        if batch["status"] in ("validating", "in_progress"):
            if batch["_polls"] >= self.polls:
                self._end(state, batch)
            else:
                batch["status"] = "in_progress"
        return _public(batch)

    def _end(self, state: Any, batch: dict[str, Any]) -> None:
        """Run the batch: answer its requests as the mode says and write the output and error files."""
        if self.mode == "fail":
            batch.update(status="failed", failed_at=int(time.time()), errors={"object": "list", "data": [
                {"code": "invalid_request", "message": "Synthetic batch failure: the input file was refused.",
                 "line": None, "param": None}]})
            return
        lines = [json.loads(ln) for ln in self.files[batch["input_file_id"]][1].decode("utf-8").splitlines() if ln.strip()]
        n_answer = len(lines) if self.mode == "complete" else len(lines) - len(lines) // 2
        out, err = [], []
        for k, line in enumerate(lines):
            rid = f"batch_req_{batch['id']}_{k}"
            if k >= n_answer:
                err.append({"id": rid, "custom_id": line.get("custom_id"), "response": None,
                            "error": {"code": "batch_expired", "message": "This request could not be executed "
                                      "before the completion window expired."}})
                continue
            code, payload = self.complete(state, line.get("body") or {})
            out.append({"id": rid, "custom_id": line.get("custom_id"),
                        "response": {"status_code": code, "request_id": rid, "body": payload}, "error": None})
        batch["output_file_id"] = self._store(f"{batch['id']}_output.jsonl", _jsonl(out), "batch_output")["id"] if out else None
        batch["error_file_id"] = self._store(f"{batch['id']}_error.jsonl", _jsonl(err), "batch_output")["id"] if err else None
        batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}
        batch["status"] = "completed" if self.mode == "complete" else "expired"


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}
