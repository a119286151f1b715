// PraX's named endpoint /synthesize through the official @gradio/client, as a paper page or a Node program calls it.
// Usage: node tests/js/prax.mjs HUB_URL   (run by tests/js/test_node_client.py against a running hub)
// Prints one line "@@RESULT {json}": the examples sent, the answer's to_dict(), and this side's own regex check.
import { Client } from "@gradio/client";

const hub = process.argv[2];
if (!hub) {
  console.error("usage: node prax.mjs HUB_URL");
  process.exit(2);
}

const examples = [
  { string: "ab1", label: "+" },
  { string: "xy7", label: "+" },
  { string: "ab", label: "-" },
  { string: "a1", label: "-" },
];

const client = await Client.connect(hub);
const api = await client.view_api();
const synthesize = api.named_endpoints["/synthesize"];
const answer = (await client.predict("/synthesize", { examples, k: 5 })).data[0];

// PraX programs use only character classes, escaped literals, {n,m} quantifiers, groups and alternation, which mean
// the same in JavaScript's RegExp (without the u flag) as in Python's; the hub always full-matches.
const fullMatches = (program, text) => new RegExp(`^(?:${program})$`).test(text);
const checked = answer.candidates.map((c) => ({
  program: c.program,
  matches_here: examples.map((e) => fullMatches(c.program, e.string)),
}));

let refusal = null;
try {
  await client.predict("/synthesize", { examples: [{ string: "ab1", label: "?" }] });
} catch (error) {
  refusal = String(error?.message ?? error);
}

console.log("@@RESULT " + JSON.stringify({
  examples,
  parameters: synthesize.parameters.map((p) => p.parameter_name),
  answer,
  checked,
  refusal,
}));
process.exit(0);  // @gradio/client 2.7 keeps its heartbeat connection open, even after client.close()
