// The mmtests compare-kernels table of one metric, and its verdicts.
import { formatVerdict, type MetricBlock } from "../lib/table";

const SPREAD = "a spread: its % reads lower-is-better (positive = less spread than the baseline)";
const SIGNIFICANT = "* *: this arm's verdict test is significant (as compare-kernels marks it)";

export function ComparisonBlock({ block }: { block: MetricBlock }) {
  return (
    <div class="block" data-testid={`table-${block.metric}`}>
      <table class="data mmtests">
        <caption>{block.title}</caption>
        <thead>
          <tr>
            <th scope="col">statistic</th>
            <th scope="col">sweep</th>
            {block.arms.map((arm, i) => (
              <th scope="col" class="num" key={arm}>
                {arm}
                {i === 0 ? " (baseline)" : ""}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {block.rows.map((row) => (
            <tr
              key={`${row.stat}/${row.sweep}`}
              class={row.headline ? "headline" : undefined}
              title={row.spread ? SPREAD : undefined}
            >
              <th scope="row">{row.stat}</th>
              <td>{row.sweep}</td>
              {row.cells.map((c, i) => (
                <td
                  class={`num tone-${c.tone}${c.significant ? " significant" : ""}`}
                  key={block.arms[i]}
                  title={c.significant ? SIGNIFICANT : undefined}
                >
                  {c.value}
                  {c.pct && (
                    <span class="pct">{c.significant ? ` *${c.pct}*` : ` (${c.pct})`}</span>
                  )}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {block.verdicts.length > 0 && (
        <table class="data verdicts" data-testid={`verdicts-${block.metric}`}>
          <caption>Verdicts against {block.arms[0]} (change: positive = better)</caption>
          <thead>
            <tr>
              <th scope="col">sweep</th>
              <th scope="col">arm</th>
              <th scope="col">verdict</th>
              <th scope="col">change [interval]</th>
              <th scope="col" class="num">
                p
              </th>
              <th scope="col" class="num">
                q
              </th>
              <th scope="col">scope</th>
              <th scope="col">why</th>
            </tr>
          </thead>
          <tbody>
            {block.verdicts.map((v) => {
              const t = formatVerdict(v.verdict, block.better);
              return (
                <tr key={`${v.sweep}/${v.arm}`} title={t.sentence}>
                  <td>{v.sweep}</td>
                  <td>{v.arm}</td>
                  <td>
                    <span class={`verdict verdict-${v.verdict?.kind ?? "none"}`}>{t.label}</span>
                  </td>
                  <td>{t.interval}</td>
                  <td class="num">{t.p}</td>
                  <td class="num">{t.q}</td>
                  <td>{t.scope}</td>
                  <td class="notes">
                    {(v.verdict?.notes ?? []).map((n) => (
                      <p key={n}>{n}</p>
                    ))}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {block.variance.length > 0 && <VarianceTable block={block} />}
    </div>
  );
}

// Each arm's noise split into what a reboot changes and what repeats within a boot: a large
// between-boot share says more boots, not more iterations, will narrow the interval.
function VarianceTable({ block }: { block: MetricBlock }) {
  return (
    <table class="data variance" data-testid={`variance-${block.metric}`}>
      <caption>
        Variance between and within boots (standard deviations in{" "}
        {block.unit || "the metric's unit"})
      </caption>
      <thead>
        <tr>
          <th scope="col">sweep</th>
          <th scope="col">arm</th>
          <th scope="col" class="num">
            boots
          </th>
          <th scope="col" class="num">
            iterations per boot
          </th>
          <th scope="col" class="num">
            SD within boots
          </th>
          <th scope="col" class="num">
            SD between boots
          </th>
          <th scope="col" class="num">
            between-boot share
          </th>
          <th scope="col">why not estimated</th>
        </tr>
      </thead>
      <tbody>
        {block.variance.flatMap((row) =>
          row.arms.map((v) => (
            <tr key={`${row.sweep}/${v.arm}`}>
              <td>{row.sweep}</td>
              <td>{v.arm}</td>
              <td class="num">{v.boots}</td>
              <td class="num">{v.iterations}</td>
              <td class="num">{v.sdWithin}</td>
              <td class="num">{v.sdBetween}</td>
              <td class="num">{v.betweenShare}</td>
              <td class="notes">{v.why}</td>
            </tr>
          )),
        )}
      </tbody>
    </table>
  );
}
