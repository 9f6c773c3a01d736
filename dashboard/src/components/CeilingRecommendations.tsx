// A ceiling sweep's recommendation per (microarch, arm, metric), as the report gives it
// (Report.ceiling_recommendations): each ceiling's mean of boot means against the best, and the
// smallest ceiling not worse than the best. The verdicts are the controller's.
import type { CeilingRecommendation } from "../api/gen/tlbfleet/v1/common";
import { betterName, formatValue } from "../lib/format";

function ratioText(v: CeilingRecommendation["values"][number]): string {
  if (v.verdict === "best" || v.ratio === undefined) return "";
  const r = v.ratio.toFixed(4);
  if (v.ratioLow === undefined || v.ratioHigh === undefined) return r;
  return `${r} [${v.ratioLow.toFixed(4)}, ${v.ratioHigh.toFixed(4)}]`;
}

/** Why the recommended ceiling, in the words of `tlbfleet compare`'s ceiling report. */
export function recommendedWhy(verdict: string): string {
  if (verdict === "best") return "it is the best";
  if (verdict === "same") return "equivalent to the best";
  if (verdict === "better") return "better than the best's mean";
  return "not worse than the best, though the comparison cannot tell them apart yet: measure more to be sure";
}

export function CeilingRecommendations({
  recommendations,
}: {
  recommendations: readonly CeilingRecommendation[];
}) {
  return (
    <div data-testid="ceiling-recommendations">
      {recommendations.map((rec) => {
        const microarch = rec.microarch || "unknown";
        return (
          <div class="block" key={`${rec.microarch}/${rec.arm}/${rec.metric}`}>
            <table class="data">
              <caption>
                {microarch}, arm {rec.arm}: {rec.metric}
                {rec.unit ? ` (${rec.unit})` : ""}, {betterName(rec.better)}
              </caption>
              <thead>
                <tr>
                  <th scope="col" class="num">
                    ceiling
                  </th>
                  <th scope="col" class="num">
                    mean
                  </th>
                  <th scope="col" class="num">
                    samples
                  </th>
                  <th scope="col" class="num">
                    boots
                  </th>
                  <th scope="col">vs best</th>
                  <th scope="col">ratio [interval]</th>
                </tr>
              </thead>
              <tbody>
                {rec.values.map((v) => (
                  <tr
                    key={v.ceiling}
                    class={v.ceiling === rec.recommended ? "recommended" : undefined}
                  >
                    <th scope="row" class="num">
                      {v.ceiling}
                    </th>
                    <td class="num">{formatValue(v.mean)}</td>
                    <td class="num">{v.samples.toLocaleString("en")}</td>
                    <td class="num">{v.boots}</td>
                    <td>
                      <span
                        class={`verdict verdict-${v.verdict === "best" ? "better" : v.verdict}`}
                      >
                        {v.verdict}
                      </span>
                      {v.ceiling === rec.recommended ? " ← recommended" : ""}
                    </td>
                    <td>{ratioText(v)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <p data-testid="ceiling-recommended">
              Recommended ceiling for {microarch}: <strong>{rec.recommended}</strong> (best{" "}
              {rec.best}; the smallest ceiling not worse than the best:{" "}
              {recommendedWhy(rec.recommendedVerdict)})
            </p>
          </div>
        );
      })}
    </div>
  );
}
