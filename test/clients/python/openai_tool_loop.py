"""A function-tool loop with the official Python `openai` client, streaming
and not, against an OpenAI-compatible base URL (argv[1]). The scripted policy
rides in `extra_body`. Also a named `tool_choice` and structured outputs
parsed into nested pydantic models. Prints one JSON summary line; the TypeScript test
(`test/clients/python-openai.test.ts`) checks it."""
import json
import sys
from typing import Literal

import openai
import pydantic

client = openai.OpenAI(base_url=sys.argv[1], api_key="unused", max_retries=0)
tools = [
    {"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    for name in ("get_weather", "get_time")
]
policy = {
    "type": "lpt-dag",
    "calls": [
        {"id": "call_w", "tool": "get_weather", "arguments": {"city": "Paris"}, "dependsOn": [], "estimatedLatencyMs": 800},
        {"id": "call_t", "tool": "get_time", "arguments": {"city": "Paris"}, "dependsOn": [], "estimatedLatencyMs": 10},
    ],
    "finalText": " It is sunny at noon.",
}


def run_tool(name, args):
    return f"sunny in {args['city']}" if name == "get_weather" else f"noon in {args['city']}"


summary = {"version": openai.__version__}

# Non-streaming loop.
messages = [{"role": "user", "content": "Weather and time in Paris?"}]
ran = []
for _ in range(4):
    res = client.chat.completions.create(model="interlace", messages=messages, tools=tools, max_tokens=200, extra_body={"interlace_policy": policy})
    choice = res.choices[0]
    messages.append(choice.message.model_dump(exclude_none=True))
    if choice.finish_reason != "tool_calls":
        summary["final"] = choice.message.content
        summary["final_finish"] = choice.finish_reason
        break
    for call in choice.message.tool_calls:
        ran.append(call.function.name)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(call.function.name, json.loads(call.function.arguments))})
summary["ran"] = sorted(ran)

# Streaming: tool-call deltas and the usage chunk.
stream = client.chat.completions.create(
    model="interlace", messages=[{"role": "user", "content": "Weather and time in Paris?"}], tools=tools, max_tokens=200,
    stream=True, stream_options={"include_usage": True}, extra_body={"interlace_policy": policy},
)
calls, finish, usage = {}, None, None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage.completion_tokens
    for choice in chunk.choices:
        for d in choice.delta.tool_calls or []:
            c = calls.setdefault(d.index, {"id": None, "name": "", "args": ""})
            c["id"] = d.id or c["id"]
            c["name"] += (d.function.name or "") if d.function else ""
            c["args"] += (d.function.arguments or "") if d.function else ""
        finish = choice.finish_reason or finish
summary["stream_calls"] = [[c["id"], c["name"], json.loads(c["args"])] for _, c in sorted(calls.items())]
summary["stream_finish"] = finish
summary["stream_usage"] = usage

# A named tool_choice: the model (random weights: it never calls on its own) must call that function.
forced = client.chat.completions.create(
    model="interlace", messages=[{"role": "user", "content": "Time in Paris?"}], tools=tools, temperature=0, max_tokens=400,
    tool_choice={"type": "function", "function": {"name": "get_time"}},
)
summary["forced"] = [forced.choices[0].finish_reason, [c.function.name for c in forced.choices[0].message.tool_calls or []]]


# Structured outputs from nested pydantic models (their schema refers to the inner model by $ref).
class Day(pydantic.BaseModel):
    day: Literal["mon", "tue"]
    high: int


class Forecast(pydantic.BaseModel):
    city: str = pydantic.Field(max_length=10)
    days: list[Day] = pydantic.Field(max_length=3)


parsed = client.chat.completions.parse(
    model="interlace", messages=[{"role": "user", "content": "The forecast for Paris?"}], response_format=Forecast, temperature=0, max_tokens=300,
)
forecast = parsed.choices[0].message.parsed
summary["parsed"] = [type(forecast).__name__, forecast.model_dump() if forecast is not None else None]

# An error in OpenAI's shape becomes the client's own exception.
try:
    client.chat.completions.create(model="interlace", messages=[])
except openai.BadRequestError as e:
    summary["error"] = {"status": e.status_code, "message": e.message}
print(json.dumps(summary))
