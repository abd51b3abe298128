#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "claims/claims.h"
#include "claims/task_claims.h"
#include "io/output.h"
#include "io/table.h"
#include "runs/probe.h"

namespace routelab {

int cmd_claims(const std::vector<std::string>& args) {
  CLI::App app{"the paper's experimental claims, judged from experiment CSVs: each claim's rule at every setting "
               "found in them, over the seeds found",
               "routelab claims"};
  std::vector<std::string> csvs, probes, only_settings;
  std::string out, readings;
  bool markdown = false, summary = false;
  app.add_option("csvs", csvs, "experiment eval CSVs (each with its FILE.json); the first one's base config is the "
                               "reference setting")
      ->required();
  app.add_option("--windows", probes,
                 "probe CSVs (`routelab probe --csv P`; P.json and P-angles.csv beside each): the runs' mixing "
                 "windows, for the window claim");
  app.add_option("--csv", out, "also write every verdict as tidy CSV (and its sidecar)");
  app.add_option("--readings", readings,
                 "also write the readings judged, as tidy CSV (and its sidecar): bits per byte by setting, scheme, "
                 "seed and length, with each run's mixing window; for task CSVs, each run's short-distance error, "
                 "observed break, mixing window and the window rule's verdict");
  app.add_option("--settings", only_settings,
                 "SETTING[,SETTING...]: judge only these settings (as the table names them: default, context=64, ...)")
      ->delimiter(',');
  app.add_flag("--markdown", markdown, "print the full markdown table (claims x settings) instead of the aligned table");
  app.add_flag("--summary", summary,
               "print the summary in markdown (one row per claim: its verdicts at the default setting, at how many "
               "settings it holds) instead of the aligned table")
      ->excludes("--markdown");
  if (int s = parse_subcommand(app, args, "claims"); s >= 0) return s;
  const auto start = std::chrono::steady_clock::now();
  OutputFiles files("claims");
  for (const auto& c : csvs) files.input(c), files.input(c + ".json");
  for (const auto& p : probes) files.input(p + ".json"), files.input(runs::probe_angles_path(p));
  if (!out.empty()) files.output(out, "--csv"), files.output(out + ".json", "the sidecar --csv FILE.json");
  if (!readings.empty())
    files.output(readings, "--readings"), files.output(readings + ".json", "the sidecar --readings FILE.json");
  // Task experiments (runs/task_eval.h) have claims of their own
  // (claims/task_claims.h); one call judges one kind.
  const std::size_t task_csvs = std::count_if(csvs.begin(), csvs.end(), claims::is_task_csv);
  if (task_csvs != 0 && task_csvs != csvs.size())
    throw claims::ClaimsError("claims: task experiment CSVs and corpus experiment CSVs are judged apart; pass one kind");
  // Only the settings asked for (all when none is named).
  const auto keep_asked = [&](auto settings) {
    for (const auto& want : only_settings)
      if (std::none_of(settings.begin(), settings.end(), [&](const auto& s) { return s.setting == want; })) {
        std::string names;
        for (const auto& s : settings) names += (names.empty() ? "" : ", ") + s.setting;
        throw claims::ClaimsError("--settings: '" + want + "' is not a setting of these CSVs; they hold: " + names);
      }
    if (!only_settings.empty())
      std::erase_if(settings, [&](const auto& s) {
        return std::find(only_settings.begin(), only_settings.end(), s.setting) == only_settings.end();
      });
    return settings;
  };
  std::vector<claims::ClaimResult> results;
  std::string readings_text;
  if (task_csvs > 0 && summary)
    throw claims::ClaimsError("--summary: task CSVs have no default setting to summarise; use --markdown");
  if (task_csvs > 0) {
    std::vector<claims::TaskReadings> settings;
    for (const auto& c : csvs)
      for (auto& s : claims::read_task_settings(c, probes)) settings.push_back(std::move(s));
    settings = keep_asked(std::move(settings));
    results = claims::evaluate_task_claims(settings);
    if (!readings.empty()) readings_text = claims::task_readings_csv(settings);
  } else {
    const auto settings = keep_asked(claims::read_settings(csvs, probes));
    results = claims::evaluate_claims(settings);
    if (!readings.empty()) readings_text = claims::readings_csv(settings);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& [path, text] : {std::pair{out, claims::claims_csv(results)}, std::pair{readings, readings_text}}) {
    if (path.empty()) continue;
    files.set(path, text);
    files.set(path + ".json", sidecar_text(path, {{"command", "claims"}, {"csvs", csvs}, {"windows", probes}}, seconds));
  }
  files.commit();
  std::fputs((summary    ? claims::claims_summary_markdown(results)
              : markdown ? (task_csvs > 0 ? claims::task_claims_markdown(results) : claims::claims_markdown(results))
                         : claims::claims_table(results))
                 .c_str(),
             stdout);
  return 0;
}

}  // namespace routelab
