"""The official OpenAI Python SDK against `recall serve`, as a plugin would use it.

Usage: serve_clients.py BASE_URL QUESTION

Lists the models, asks QUESTION whole and streamed, and prints one JSON object with what the
SDK parsed (the content, Recall's `recall` extension, the finish reason) for the Rust test
(tests/it/serve.rs) to check. An SDK error ends the script non-zero with its message.
"""

import json
import sys

from openai import OpenAI


def main():
    base_url, question = sys.argv[1], sys.argv[2]
    # No key is asked on loopback; the SDK insists on one anyway.
    client = OpenAI(base_url=base_url, api_key="not-needed-on-loopback", max_retries=0)
    messages = [{"role": "user", "content": question}]

    models = [m.id for m in client.models.list().data]

    whole = client.chat.completions.create(model="recall", messages=messages)

    streamed, chunks, last = [], 0, None
    for chunk in client.chat.completions.create(model="recall", messages=messages, stream=True):
        chunks += 1
        if chunk.choices and chunk.choices[0].delta.content:
            streamed.append(chunk.choices[0].delta.content)
        last = chunk

    print(json.dumps({
        "models": models,
        "whole": {
            "content": whole.choices[0].message.content,
            "finish_reason": whole.choices[0].finish_reason,
            "recall": (whole.model_extra or {}).get("recall"),
            "usage": whole.usage.model_dump() if whole.usage else None,
        },
        "streamed": {
            "content": "".join(streamed),
            "chunks": chunks,
            "finish_reason": last.choices[0].finish_reason if last and last.choices else None,
            "recall": (last.model_extra or {}).get("recall") if last else None,
        },
    }))


if __name__ == "__main__":
    main()
