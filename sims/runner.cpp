#include "sims/runner.h"

#include "io/output.h"
#include "io/parse.h"
#include "io/sha256.h"

#include "cuda/device.h"
#include "stats/distributed.h"
#include "stats/intervals.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <limits>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <omp.h>

namespace routelab {

namespace {

// The columns a row's measured doubles go to, in the CSV's order.
constexpr std::array<const char*, 5> kMeasured = {"estimate", "stderr", "ci_low", "ci_high", "theory"};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.push_back("");
  if (text.empty()) out.push_back("");
  return out;
}

const SimFlag* find_sim_flag(const Sim& sim, const std::string& name) {
  for (const auto& f : sim.flags)
    if (f.name == name) return &f;
  return nullptr;
}

const FlagSpec* find_family_flag(const std::string& name) {
  for (const auto& f : family_flags())
    if (f.name == name) return &f;
  return nullptr;
}

std::string accepted_flags(const Sim& sim) {
  std::string out;
  auto add = [&](const std::string& n) { out += (out.empty() ? "--" : ", --") + n; };
  if (sim.uses_family)
    for (const auto& f : family_flags()) add(f.name);
  for (const auto& f : sim.flags) add(f.name);
  for (const char* f : {"samples", "seed", "threads", "out", "shard"}) add(f);
  return out;
}

std::string text_of(const RunRequest& req, const std::string& flag, const std::string& fallback) {
  auto it = req.given.find(flag);
  return it == req.given.end() ? fallback : it->second;
}

std::vector<std::string> sweep_values(const std::string& flag, const std::string& text, bool series) {
  if (series) return {text};
  return split(text, list_valued(flag) ? ';' : ',');
}

// The family flags that at least one swept family reads, in declaration order.
std::vector<std::string> family_columns(const std::vector<std::string>& family_names) {
  std::vector<std::string> cols = {"family"};
  for (const auto& f : family_flags()) {
    if (f.name == "family") continue;
    for (const auto& name : family_names) {
      const auto& info = family_info(name);
      if (std::find(info.flags.begin(), info.flags.end(), f.name) != info.flags.end()) {
        cols.push_back(f.name);
        break;
      }
    }
  }
  return cols;
}

std::vector<std::string> swept_families(const RunRequest& req) {
  const Sim& sim = find_sim(req.sim);
  if (!sim.uses_family) return {};
  std::vector<std::string> names = split(text_of(req, "family", find_family_flag("family")->default_value), ',');
  for (const auto& n : names) family_info(n);  // validates
  return names;
}

[[noreturn]] void refuse_family_flag(const std::string& flag, const std::string& family) {
  std::string takes;
  for (const auto& f : family_info(family).flags) takes += (takes.empty() ? "--" : ", --") + f;
  throw BadInput(flag, fmt::format("does not apply to family {}; it takes {}", family, takes));
}

}  // namespace

bool list_valued(const std::string& flag) { return flag == "lambdas"; }

Params family_point(const std::string& family, const std::vector<std::pair<std::string, std::string>>& given) {
  const FamilyInfo& info = family_info(family);
  Params p{{"family", family}};
  for (const auto& f : info.flags) p[f] = find_family_flag(f)->default_value;
  for (const auto& [flag, value] : given) {
    if (std::find(info.flags.begin(), info.flags.end(), flag) == info.flags.end()) refuse_family_flag(flag, family);
    p[flag] = value;
  }
  return p;
}

RunRequest parse_sim_args(const std::string& sim_name, const std::vector<std::string>& args) {
  const Sim& sim = find_sim(sim_name);
  RunRequest req;
  req.sim = sim_name;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0)
      throw BadInput("sim", fmt::format("unexpected argument '{}'; flags take the form --name value", a));
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw BadInput(name, "a value is required");
      value = args[++i];
    }
    const bool known = (sim.uses_family && find_family_flag(name)) || find_sim_flag(sim, name) ||
                       name == "samples" || name == "seed" || name == "threads" || name == "out" ||
                       name == "shard";
    if (!known)
      throw BadInput(name, fmt::format("unknown flag for sim {}; accepts {}", sim_name, accepted_flags(sim)));
    if (req.given.count(name)) throw BadInput(name, "given twice; give it once (a comma list sweeps it)");
    req.given[name] = value;
  }
  auto integer = [&](const std::string& flag, long long lo, long long hi, const std::string& accepts) -> long long {
    Params p{{flag, req.given.at(flag)}};
    return require_int(p, flag, lo, hi, accepts);
  };
  // Sample i of a point reads stream (point << 40 | i): 2^40 samples at most.
  if (req.given.count("samples"))
    req.samples = integer("samples", 2, 1LL << 40, "an integer in [2, 2^40 = 1099511627776]");
  if (req.given.count("seed")) {
    const auto seed = parse_unsigned(req.given.at("seed"));
    if (!seed)
      throw BadInput("seed", fmt::format("'{}' is not accepted; an integer in [0, 2^64 - 1]", req.given.at("seed")));
    req.seed = *seed;
  }
  req.threads = req.given.count("threads") ? int(integer("threads", 1, kMaxThreads, "an integer in [1, 1024]"))
                                           : omp_get_max_threads();
  if (req.given.count("out")) {
    req.out = req.given.at("out");
    if (req.out.empty()) throw BadInput("out", "a file path");
  }
  if (req.given.count("shard")) {
    const std::string& t = req.given.at("shard");
    const auto slash = t.find('/');
    long long k = -1, n = 0;
    if (slash != std::string::npos) {
      k = parse_integer(std::string_view(t).substr(0, slash)).value_or(-1);
      n = parse_integer(std::string_view(t).substr(slash + 1)).value_or(0);
    }
    if (n < 1 || n > 1000000 || k < 0 || k >= n)
      throw BadInput("shard", fmt::format("'{}' is not accepted; K/N with 0 <= K < N <= 1000000, e.g. 0/4", t));
    req.shard = int(k);
    req.shards = int(n);
  }
  for (const char* f : {"samples", "seed", "threads", "out", "shard"}) req.given.erase(f);
  return req;
}

std::vector<Params> expand_points(const RunRequest& req) {
  const Sim& sim = find_sim(req.sim);
  const std::vector<std::string> families = swept_families(req);
  // A family flag given by the user must apply to some swept family.
  for (const auto& [flag, text] : req.given) {
    if (flag == "family" || !find_family_flag(flag) || find_sim_flag(sim, flag)) continue;
    bool used = false;
    for (const auto& fam : families) {
      const auto& fl = family_info(fam).flags;
      used = used || std::find(fl.begin(), fl.end(), flag) != fl.end();
    }
    if (!used) refuse_family_flag(flag, families.front());
  }
  std::vector<Params> points;
  for (const auto& fam : families.empty() ? std::vector<std::string>{""} : families) {
    // The flags of this point, in order: the family's, then the simulation's.
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    if (!fam.empty()) {
      const Params defaults = family_point(fam);
      for (const auto& f : family_info(fam).flags)
        axes.push_back({f, sweep_values(f, text_of(req, f, defaults.at(f)), false)});
    }
    for (const auto& f : sim.flags) axes.push_back({f.name, sweep_values(f.name, text_of(req, f.name, f.default_value), f.series)});
    Params base;
    if (!fam.empty()) base["family"] = fam;
    // Odometer over the axes, the last flag varying fastest.
    std::size_t total = 1;
    for (const auto& axis : axes) total *= axis.second.size();
    for (std::size_t t = 0; t < total; ++t) {
      Params p = base;
      std::size_t rest = t;
      for (std::size_t a = axes.size(); a-- > 0;) {
        p[axes[a].first] = axes[a].second[rest % axes[a].second.size()];
        rest /= axes[a].second.size();
      }
      points.push_back(p);
    }
  }
  return points;
}

Table run_sim(const RunRequest& req, nlohmann::json* config, MeasuredColumns* measured) {
  const Sim& sim = find_sim(req.sim);
  const std::vector<Params> points = expand_points(req);
  if (points.size() >= (1u << 16)) throw BadInput("sim", "a sweep has at most 65535 points");
  // Validate every point before any work, so bad input writes nothing.
  for (const auto& p : points) {
    if (sim.uses_family) make_step_law(p);
    if (sim.validate) sim.validate(p);
    if (req.gpu) {
      if (!sim.gpu_refusal) throw cuda::DeviceError("--device cuda: sim " + sim.name + " has no GPU path; use --device cpu");
      const std::string why = sim.gpu_refusal(p);
      if (!why.empty()) throw cuda::DeviceError("--device cuda: " + why);
    }
  }

  // A shard's partial CSV leads with the point index, for `routelab merge`.
  const bool partial = req.shards > 0;
  std::vector<std::string> columns = {"sim", "result", "quantity"};
  if (partial) columns.insert(columns.begin(), "point");
  const std::vector<std::string> fams = swept_families(req);
  if (sim.uses_family)
    for (const auto& c : family_columns(fams)) columns.push_back(c);
  for (const auto& f : sim.flags) columns.push_back(f.name);
  columns.push_back("samples");
  columns.push_back("seed");
  for (const char* c : kMeasured) columns.push_back(c);
  columns.push_back("kind");
  columns.push_back("verdict");
  Table table(columns);
  if (measured) {
    measured->clear();
    for (const char* c : kMeasured) measured->push_back({c, {}});
  }

  const long long samples = req.samples > 0 ? req.samples : sim.default_samples;
  const auto start = std::chrono::steady_clock::now();
  const std::size_t mine = partial ? (points.size() + req.shards - 1 - req.shard) / req.shards : points.size();
  std::size_t done = 0;
  for (std::size_t k = 0; k < points.size(); ++k) {
    if (partial && long(k % req.shards) != req.shard) continue;
    SimContext ctx{req.seed, req.threads, samples, (long long)k, req.gpu};
    const auto rows = sim.run(points[k], ctx);
    for (const auto& r : rows) {
      std::vector<std::pair<std::string, std::string>> cells = {
          {"sim", sim.name}, {"result", r.result}, {"quantity", r.quantity}};
      if (partial) cells.push_back({"point", std::to_string(k)});
      for (const auto& [flag, value] : points[k]) {
        const bool series = find_sim_flag(sim, flag) && find_sim_flag(sim, flag)->series;
        if (!series) cells.push_back({flag, value});
      }
      for (const auto& c : r.cells) cells.push_back(c);
      cells.push_back({"samples", std::to_string(samples)});
      cells.push_back({"seed", std::to_string(req.seed)});
      const double values[] = {r.estimate, r.stderr_, r.ci_low, r.ci_high, r.theory.value_or(kNaN)};
      for (std::size_t m = 0; m < kMeasured.size(); ++m) {
        cells.push_back({kMeasured[m], format_number(values[m])});
        // Every NaN prints as "", which parses to the one quiet NaN.
        if (measured) (*measured)[m].second.push_back(std::isnan(values[m]) ? kNaN : values[m]);
      }
      cells.push_back({"kind", to_string(r.kind)});
      cells.push_back({"verdict", to_string(r.verdict)});
      table.add_row(cells);
    }
    if (req.progress && dist::is_root()) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "routelab: %s point %zu/%zu done, %.1f s\n", sim.name.c_str(), k + 1, points.size(), s);
    }
    if (req.on_point) req.on_point(++done, mine);
  }
  if (partial && std::size_t(req.shard) >= points.size() && dist::is_root())
    std::fprintf(stderr, "routelab: sim %s: shard %d/%d covers no point (the sweep has %zu); its partial has no rows\n",
                 sim.name.c_str(), req.shard, req.shards, points.size());
  if (config) {
    nlohmann::json j;
    j["sim"] = sim.name;
    j["flags"] = req.given;
    j["points"] = points.size();
    j["samples"] = samples;
    j["seed"] = req.seed;
    j["threads"] = req.threads;
    j["z"] = kZ;
    j["ci"] = "estimate +- z * stderr at the check's z";
    j["ranks"] = dist::size();
    if (req.gpu) j["device"] = "cuda";
    // merge checks a partial against these: its bytes, rows and points.
    if (partial) {
      const std::string csv = table.to_csv();
      j["shard"] = {{"index", req.shard},
                    {"count", req.shards},
                    {"rows", table.rows().size()},
                    {"sha256", sha256_hex(csv.data(), csv.size())}};
    }
    *config = j;
  }
  return table;
}

Table run_sim_to_outputs(const RunRequest& req, MeasuredColumns* measured) {
  OutputFiles files("sim");
  if (!req.out.empty()) files.output(req.out, "--out"), files.output(req.out + ".json", "the sidecar --out FILE.json");
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json config;
  Table table = run_sim(req, &config, measured);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!req.out.empty() && dist::is_root()) {
    files.set(req.out, table.to_csv());
    files.set(req.out + ".json", sidecar_text(req.out, config, wall));
    files.commit();
  }
  return table;
}

std::string merge_partials(const std::vector<std::string>& paths, nlohmann::json* config) {
  if (paths.empty()) throw BadInput("merge", "give the partial CSV files of every shard");
  std::string header;
  nlohmann::json first;
  std::vector<bool> seen;
  long long points = 0;
  std::vector<int> point_shard;  // which shard's file gave each point's rows (-1: none yet)
  std::vector<std::pair<long long, std::string>> rows;  // (point, row text without the point)
  for (const auto& path : paths) {
    auto refuse = [&](const std::string& why) { return BadInput("merge", path + ": " + why); };
    std::ifstream sidecar(path + ".json");
    if (!sidecar) throw refuse("its sidecar " + path + ".json is missing; merge takes the CSV files of --shard runs");
    nlohmann::json j;
    try {
      sidecar >> j;
    } catch (const std::exception&) {
      throw refuse("its sidecar is not valid JSON");
    }
    const nlohmann::json* sh = j.is_object() && j.contains("shard") ? &j["shard"] : nullptr;
    if (!sh) throw refuse("not a partial result (its sidecar has no shard; run with --shard K/N)");
    auto integer = [&](const nlohmann::json& o, const char* key, long long lo, long long hi) {
      if (!o.is_object() || !o.contains(key) || !o[key].is_number_integer() || o[key].get<long long>() < lo ||
          o[key].get<long long>() > hi)
        throw refuse(fmt::format("its sidecar's {} must be an integer in [{}, {}]", key, lo, hi));
      return o[key].get<long long>();
    };
    const long long count = integer(*sh, "count", 1, 1000000);
    const long long index = integer(*sh, "index", 0, count - 1);
    const long long file_points = integer(j, "points", 1, 65535);
    // A shard past the last point (N > points) covers none and has no rows.
    const bool covers_a_point = index < file_points;
    const long long want_rows = integer(*sh, "rows", covers_a_point ? 1 : 0, covers_a_point ? LLONG_MAX : 0);
    if (!sh->contains("sha256") || !(*sh)["sha256"].is_string())
      throw refuse("its sidecar has no sha256 of the partial (made by an older routelab: run the shard again)");
    nlohmann::json key = j;
    for (const char* run_specific : {"shard", "wall_seconds", "csv", "threads", "ranks", "device"}) key.erase(run_specific);
    if (first.is_null()) {
      first = key;
      seen.assign(std::size_t(count), false);
      points = file_points;
      point_shard.assign(std::size_t(points), -1);
    } else if (key != first || (long long)seen.size() != count) {
      throw refuse("comes from another run (its flags, seed, samples or shard count differ)");
    }
    if (seen[index]) throw BadInput("merge", fmt::format("shard {}/{} is given twice", index, count));
    seen[index] = true;
    std::ifstream csv_file(path, std::ios::binary);
    std::stringstream text;
    text << csv_file.rdbuf();
    const std::string csv = text.str();
    if (!csv_file || sha256_hex(csv.data(), csv.size()) != (*sh)["sha256"].get<std::string>())
      throw refuse("its bytes differ from what its shard wrote (cut, edited, or another file's rows); run the "
                   "shard again");
    std::istringstream lines(csv);
    std::string line;
    if (!std::getline(lines, line) || line.rfind("point,", 0) != 0) throw refuse("not a partial CSV");
    if (header.empty()) header = line.substr(6);
    if (line.substr(6) != header) throw refuse("its columns differ from the other partials'");
    long long got = 0;
    while (std::getline(lines, line)) {
      const auto comma = line.find(',');
      const auto point = parse_integer(std::string_view(line).substr(0, comma));
      if (comma == std::string::npos || !point || *point < 0 || *point >= points || *point % count != index)
        throw refuse(fmt::format("row {} does not belong to shard {}/{}", got + 2, index, count));
      if (point_shard[*point] >= 0 && point_shard[*point] != index)
        throw refuse(fmt::format("point {} is also in shard {}", *point, point_shard[*point]));
      point_shard[*point] = int(index);
      rows.push_back({*point, line.substr(comma + 1)});
      ++got;
    }
    if (got != want_rows) throw refuse(fmt::format("it has {} rows; its shard wrote {}", got, want_rows));
  }
  for (std::size_t k = 0; k < seen.size(); ++k)
    if (!seen[k]) throw BadInput("merge", fmt::format("shard {}/{} is missing", k, seen.size()));
  for (long long p = 0; p < points; ++p)
    if (point_shard[p] < 0) throw BadInput("merge", fmt::format("point {} has no rows in any partial", p));
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out = header + "\n";
  for (const auto& r : rows) out += r.second + "\n";
  if (config) {
    *config = first;
    (*config)["merged_from"] = paths;
  }
  return out;
}

std::string sim_help(const Sim& sim) {
  std::string out = fmt::format("routelab sim {} [flags]\n  {}\n\nflags (a comma list sweeps a flag):\n", sim.name, sim.summary);
  if (sim.uses_family)
    for (const auto& f : family_flags())
      out += fmt::format("  --{:<12} {} (default: {})\n", f.name, f.help, f.default_value.empty() ? "none" : f.default_value);
  for (const auto& f : sim.flags)
    out += fmt::format("  --{:<12} {} (default: {}){}\n", f.name, f.help, f.default_value,
                       f.series ? "; a list, read in one run" : "");
  out += fmt::format("  --{:<12} {} (default: {})\n", "samples", "Monte Carlo samples per point", sim.default_samples);
  out += "  --seed         seed of the counter-based streams (default: 1)\n"
         "  --threads      OpenMP threads; output bytes do not depend on it (default: all cores)\n"
         "  --out          CSV file (+ FILE.json sidecar); stdout if absent\n"
         "  --shard K/N    run only the points p with p % N == K and write a partial for `routelab merge`\n";
  return out;
}

}  // namespace routelab
