/**
 * A finished run's exports as download links (docs/formats.md), what the controller's
 * GET /api/v1/runs/{id}/export/{format} answers: mmtests' and LKP's layouts as a tar of the
 * files `tlbfleet export` writes (`tar -xf` gives the directory their tools read), Bencher's
 * BMF as its JSON. Nothing while the run is going: the controller refuses to export a run that
 * has not finished. Otava's CSV is a series' export, not a run's (`tlbfleet export --series`).
 */
import { api } from "../api";
import type { RunState } from "../api/gen/tlbfleet/v1/fleet";
import { isTerminal } from "../api/sse";

/** The run formats of controller/report/export_download.h, in the order the page lists them. */
export const RUN_EXPORTS: readonly { format: string; label: string; title: string }[] = [
  {
    format: "mmtests",
    label: "mmtests (tar)",
    title: "mmtests' results layout, one directory per arm: compare-mmtests.pl reads it",
  },
  {
    format: "lkp",
    label: "LKP (tar)",
    title: "LKP result roots: stats.json per run, matrix.json, avg.json and stddev.json",
  },
  {
    format: "bmf",
    label: "Bencher BMF (JSON)",
    title: "the comparison's estimates and intervals in Bencher Metric Format",
  },
];

export function ExportLinks({ runId, state }: { runId: string; state: RunState }) {
  if (!isTerminal(state)) return null;
  return (
    <p class="exports" data-testid="export-links">
      Download as{" "}
      {RUN_EXPORTS.map((e, i) => (
        <span key={e.format}>
          {i > 0 && ", "}
          <a
            href={api.exportUrl(runId, e.format)}
            download
            title={e.title}
            data-testid={`export-${e.format}`}
          >
            {e.label}
          </a>
        </span>
      ))}
    </p>
  );
}
