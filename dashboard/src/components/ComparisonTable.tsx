// The mmtests compare-kernels table of one metric, and its verdicts.
import { formatVerdict, type MetricBlock } from "../lib/table";

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
            <tr key={`${row.stat}/${row.sweep}`}>
              <th scope="row">{row.stat}</th>
              <td>{row.sweep}</td>
              {row.cells.map((c, i) => (
                <td class={`num tone-${c.tone}`} key={block.arms[i]}>
                  {c.value}
                  {c.pct && <span class="pct"> ({c.pct})</span>}
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
    </div>
  );
}
