"""Chat with a ragsift knowledge base through the official `openai` SDK (/v1/chat/completions).

    pip install 'ragsift[openai]'
    ragsift ingest samples --kb demo
    ragsift keys create --name chat-bot --role reader      # prints the secret once
    ragsift serve --port 8000                              # RAGSIFT_LLM_BASE_URL: model answers
    export RAGSIFT_API_KEY=rs_...
    python examples/openai_chat.py "年假可以结转几天？" --model kb:demo
    python examples/openai_chat.py "hotel limit per night" --model kb:demo --stream

It lists the models the key may use (its knowledge bases, as kb:NAME), asks the question and
prints the answer (its [N](citation://N) links included) and then each cited passage from the
`ragsift` extension field of the reply (of the last chunk when streaming).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from openai import OpenAI


def show_citations(extension: dict[str, Any] | None) -> None:
    if not extension:
        return
    print()
    for citation in extension["citations"]:
        where = " › ".join([citation["filename"], *citation["heading_path"]])
        text = " ".join(citation["text"].split())
        print(f"[{citation['n']}] {where}\n    {text[:200]}{'…' if len(text) > 200 else ''}")
    if extension["extractive"]:
        print("(extractive: no chat model is configured on the server)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question")
    parser.add_argument("--model", help="kb:NAME (default: the first model listed)")
    parser.add_argument("--url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    # any string works with `ragsift serve --no-auth`
    client = OpenAI(base_url=args.url, api_key=os.environ.get("RAGSIFT_API_KEY", "none"))

    models = [model.id for model in client.models.list()]
    print("models:", ", ".join(models) or "(none: create a knowledge base first)")
    model = args.model or (models[0] if models else None)
    if model is None:
        return
    messages: Any = [{"role": "user", "content": args.question}]
    if not args.stream:
        completion = client.chat.completions.create(model=model, messages=messages)
        print(completion.choices[0].message.content)
        show_citations((completion.model_extra or {}).get("ragsift"))
        return
    extension = None
    for chunk in client.chat.completions.create(model=model, messages=messages, stream=True):
        for choice in chunk.choices:
            print(choice.delta.content or "", end="", flush=True)
        extension = (chunk.model_extra or {}).get("ragsift", extension)
    print()
    show_citations(extension)


if __name__ == "__main__":
    main()
