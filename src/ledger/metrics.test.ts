import { describe, expect, it } from "vitest";
import { parseMetricLines } from "./metrics.js";

describe("parseMetricLines", () => {
  it.each([
    ["plain", "metric name=auc value=0.93", [{ name: "auc", value: 0.93 }]],
    ["with unit", "metric name=latency value=12.5 unit=ms", [{ name: "latency", value: 12.5, unit: "ms" }]],
    ["fields in any order", "metric unit=s value=3 name=t", [{ name: "t", value: 3, unit: "s" }]],
    ["leading whitespace", "   metric name=x value=1", [{ name: "x", value: 1 }]],
    ["integer, negative, exponent", "metric name=a value=-2e3", [{ name: "a", value: -2000 }]],
    ["zero", "metric name=z value=0", [{ name: "z", value: 0 }]],
    [
      "CRLF line ends",
      "metric name=a value=1\r\nmetric name=b value=2\r\n",
      [
        { name: "a", value: 1 },
        { name: "b", value: 2 },
      ],
    ],
    ["empty unit is dropped", "metric name=a value=1 unit=", [{ name: "a", value: 1 }]],
    ["unknown extra fields are ignored", "metric name=a value=1 run=7", [{ name: "a", value: 1 }]],
  ])("%s", (_n, text, want) => {
    expect(parseMetricLines(text)).toEqual(want);
  });

  it.each([
    ["missing value", "metric name=x"],
    ["empty value", "metric name=x value="],
    ["non-numeric value", "metric name=x value=fast"],
    ["infinite value", "metric name=x value=Infinity"],
    ["NaN value", "metric name=x value=NaN"],
    ["missing name", "metric value=3"],
    ["empty name", "metric name= value=3"],
    ["bare word", "metric"],
    ["not at line start", "the metric name=x value=1"],
    ["different keyword", "metrics name=x value=1"],
    ["no space after keyword", "metricname=x value=1"],
    ["junk", "PASS tests/foo.test.ts (3 tests)"],
    ["empty", ""],
  ])("skips a line with %s", (_n, text) => {
    expect(parseMetricLines(text)).toEqual([]);
  });

  it("picks the metric lines out of ordinary output, in order", () => {
    const out = [
      "running 12 tests",
      "metric name=auc value=0.91",
      "ok 12 passed",
      "metric name=broken",
      "metric name=rows value=1200 unit=rows",
      "done",
    ].join("\n");
    expect(parseMetricLines(out)).toEqual([
      { name: "auc", value: 0.91 },
      { name: "rows", value: 1200, unit: "rows" },
    ]);
  });
});
