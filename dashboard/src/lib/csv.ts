// The raw samples of a run as CSV, byte for byte what `tlbfleet results RUN --format csv`
// prints (controller/cli/format.cc: ResultsCsvHeader, ResultsCsvRow), so a download and a
// script see the same file. The browser test compares the two.
import { Better, type Sample } from "../api/gen/tlbfleet/v1/common";

export const RESULTS_CSV_HEADER =
  "run_id,job_id,arm,param_name,param_value,iteration,metric,series,value,unit,better," +
  "host,boot_id,kernel_release,ceiling_applied,ceiling,ceiling_observed,peer_host," +
  "agent_id,machine_id,slot,excluded\n";

/** RFC 4180 quoting, only where needed (CsvEscape). */
export function csvEscape(field: string): string {
  if (!/[,"\r\n]/.test(field)) return field;
  return `"${field.replace(/"/g, '""')}"`;
}

/**
 * A double as C++'s std::to_chars(double) writes it: the shortest digits that round-trip,
 * in fixed or scientific notation, whichever is shorter (fixed on a tie); the exponent has
 * a sign and at least two digits ("1e+21", "1e-07"); "nan", "inf", "-inf".
 */
export function formatDoubleLikeCpp(value: number): string {
  if (Number.isNaN(value)) return "nan";
  if (value === Infinity) return "inf";
  if (value === -Infinity) return "-inf";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  const sign = value < 0 ? "-" : "";
  // toExponential() with no argument gives the shortest round-trip digits.
  const [mantissa, exp] = Math.abs(value).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const e = Number(exp);
  const scientific = `${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ""}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  let fixed: string;
  if (e >= digits.length - 1) fixed = digits + "0".repeat(e - (digits.length - 1));
  else if (e >= 0) fixed = `${digits.slice(0, e + 1)}.${digits.slice(e + 1)}`;
  else fixed = `0.${"0".repeat(-e - 1)}${digits}`;
  return sign + (fixed.length <= scientific.length ? fixed : scientific);
}

function betterName(better: Better): string {
  if (better === Better.BETTER_HIGHER) return "higher";
  if (better === Better.BETTER_LOWER) return "lower";
  return "";
}

export function resultsCsvRow(s: Sample): string {
  const fields = [
    s.runId,
    String(s.jobId),
    s.arm,
    s.paramName,
    s.paramValue,
    String(s.iteration),
    s.metric,
    s.series,
    formatDoubleLikeCpp(s.value),
    s.unit,
    betterName(s.better),
    s.host,
    s.bootId,
    s.kernelRelease,
    s.ceilingApplied ? "true" : "false",
    s.ceilingApplied || s.ceilingObserved ? String(s.ceiling) : "",
    s.ceilingObserved ? "true" : "false",
    s.peerHost,
    s.agentId,
    s.machineId,
    String(s.slot),
    s.excluded,
  ];
  return `${fields.map(csvEscape).join(",")}\n`;
}

export function resultsCsv(samples: readonly Sample[]): string {
  return RESULTS_CSV_HEADER + samples.map(resultsCsvRow).join("");
}
