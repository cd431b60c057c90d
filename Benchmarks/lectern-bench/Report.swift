import Foundation

/// The Markdown table and the JSON document.
struct Report {
    /// Each measured player's results, by `PlayerKind.key`.
    let results: [String: PlayerResult]
    let reference: PipelineReference?
    let settings: Settings

    /// The players' columns, in order: Lectern (the aims are its), the lecternd of `--baseline-lecternd` when one
    /// was measured, then the reference players. A reference player that was not measured keeps its column, with
    /// "—" (the notes under the table say why).
    static let allColumns: [(key: String, title: String)] = [("lectern", "Lectern"),
                                                             ("lectern-baseline", "Lectern (baseline)"),
                                                             ("mpv", "mpv (mpv-mpris)"), ("vlc", "VLC")]
    var columns: [(key: String, title: String)] {
        Report.allColumns.filter { $0.key != "lectern-baseline" || results[$0.key] != nil }
    }

    // MARK: Formatting

    static func us(_ ns: UInt64) -> String {
        let v = Double(ns) / 1000
        return v >= 100 ? String(format: "%.0f", v) : String(format: "%.1f", v)
    }
    static func ms(_ ns: UInt64) -> String { String(format: "%.2f", Double(ns) / 1e6) }
    static func mb(_ kb: Int) -> String { String(format: "%.1f", Double(kb) / 1024) }
    static func ratio(_ a: UInt64, _ b: UInt64) -> String {
        b == 0 ? "—" : String(format: "%.2fx", Double(a) / Double(b))
    }

    /// One cell per player column: `body` of its results, or "—".
    private func cells(_ body: (PlayerResult) -> String) -> [String] {
        columns.map { results[$0.key].map(body) ?? "—" }
    }

    private func triple(_ s: Samples) -> String {
        s.count == 0 ? "—" : "\(Report.us(s.p50)) / \(Report.us(s.p95)) / \(Report.us(s.p99))"
    }

    private func verdict(_ met: Bool?) -> String {
        switch met {
        case .some(true): return " (met)"
        case .some(false): return " (**missed**)"
        case .none: return ""
        }
    }

    // MARK: Table

    var markdown: String {
        var rows: [[String]] = []
        func row(_ metric: String, _ players: [String], _ floor: String = "—", _ aim: String = "—") {
            rows.append([metric] + players + [floor, aim])
        }
        let l = results["lectern"]
        func floorRatio(_ pick: (PlayerResult) -> Samples) -> String {
            var parts: [String] = []
            for column in columns {
                guard let r = results[column.key], pick(r).count > 0, r.pingBus.count > 0 else { continue }
                var part = "\(r.label) \(Report.ratio(pick(r).p50, r.pingBus.p50))"
                if r.echoGet.count > 0 { part += " (\(Report.ratio(pick(r).p50, r.echoGet.p50)) of 2-hop)" }
                parts.append(part)
            }
            return parts.isEmpty ? "—" : "p50 ÷ Ping floor p50: " + parts.joined(separator: "; ")
        }
        let gst = reference

        let getMet = l.map { Double($0.get.p50) <= 1.5 * Double($0.pingBus.p50) }
        row("Get(Player, PlaybackStatus) p50 / p95 / p99, µs", cells { triple($0.get) }, floorRatio(\.get),
            "p50 ≤ 1.5x floor" + verdict(getMet))
        row("GetAll(Player) p50 / p95 / p99, µs", cells { triple($0.getAll) }, floorRatio(\.getAll))
        row("Peer.Ping to the player (answered by its D-Bus library) p50 / p95 / p99, µs",
            cells { triple($0.pingPlayer) }, floorRatio(\.pingPlayer))
        row("Peer.Ping to dbus-daemon (the floor) p50 / p95 / p99, µs, same bus as the player",
            cells { triple($0.pingBus) }, "floor (one hop)")
        row("Get to a minimal libdbus responder process (two-hop floor) p50 / p95 / p99, µs",
            cells { triple($0.echoGet) }, floorRatio(\.echoGet))

        func signalCell(_ s: Samples, _ missed: Int) -> String {
            s.count == 0 ? "— (\(missed) missed)"
                : "\(Report.ms(s.p50)) / \(Report.ms(s.p99))" + (missed > 0 ? " (\(missed) missed)" : "")
        }
        let ppMet = l.map { $0.playPause.count > 0 && $0.playPause.p50 <= 2_000_000 && $0.playPause.p99 <= 2_000_000 }
        row("PlayPause → PropertiesChanged(PlaybackStatus) p50 / p99, ms",
            cells { signalCell($0.playPause, $0.playPauseMissed) }, "—", "≤ 2 ms" + verdict(ppMet))
        let seekMet = l.map { $0.seek.count > 0 && $0.seek.p50 <= 2_000_000 && $0.seek.p99 <= 2_000_000 }
        row("Seek(±1 s) → Seeked p50 / p99, ms", cells { signalCell($0.seek, $0.seekMissed) }, "—",
            "≤ 2 ms" + verdict(seekMet))

        let rssMet = l.map { $0.playRSSKB > 0 && $0.playRSSKB < 30 * 1024 }
        row("VmRSS / VmHWM, playing 5 s, MB", cells {
                "\(Report.mb($0.playRSSKB)) / \(Report.mb($0.playHWMKB))"
                    + ($0.playChildrenRSSKB > 0 ? " (+ \(Report.mb($0.playChildrenRSSKB)) in child processes)" : "")
            },
            gst.map { "gst-launch playbin alone: \(Report.mb($0.rssKB)) / \(Report.mb($0.hwmKB))" } ?? "—",
            "RSS < 30 MB" + verdict(rssMet))
        row("VmRSS / VmHWM, idle (nothing loaded), MB",
            cells { "\(Report.mb($0.idleRSSKB)) / \(Report.mb($0.idleHWMKB))" })
        // RSS split: what the process wrote (its own cost) and the clean file-backed pages (code, read-only data).
        func rollupCell(_ r: ProcStats.Rollup?) -> String {
            guard let r else { return "—" }
            return "\(Report.mb(r.privateDirtyKB)) / \(Report.mb(r.privateCleanKB)) / \(Report.mb(r.sharedCleanKB))"
        }
        row("Private_Dirty / Private_Clean / Shared_Clean (smaps_rollup), playing 5 s, MB",
            cells { rollupCell($0.playRollup) })
        row("Private_Dirty / Private_Clean / Shared_Clean (smaps_rollup), idle, MB",
            cells { rollupCell($0.idleRollup) })
        func cpuCell(_ c: CPUWindow.Result?) -> String {
            guard let c else { return "—" }
            return String(format: "%.2f %% (schedstat %.2f %%)", c.percent, c.schedPercent)
        }
        // Into fakesink: what GStreamer's own streaming threads cost against a timed null output (the bare
        // gst-launch costs as much); the aim is judged into a sound server, as people listen (docs/benchmarks.md).
        row("CPU playing into a null output (Lectern: fakesink sync=true), \(settings.cpuWindow) window, % of one core "
            + "(utime+stime)",
            cells { cpuCell($0.playCPU) }, gst.map { "gst-launch playbin alone: " + cpuCell($0.cpu) } ?? "—",
            "— (judged into PulseAudio: next row)")
        func pulseCell(_ pair: CPUPair?) -> String {
            guard let pair else { return "—" }
            return String(format: "%.2f %% + server %.2f %% = %.2f %%", pair.player.schedPercent, pair.server.schedPercent,
                          pair.player.schedPercent + pair.server.schedPercent)
        }
        let cpuMet = l.flatMap { $0.intoSoundServer.map { $0.plain.player.schedPercent <= 0.4 } }
        row("CPU playing into PulseAudio (null sink), \(settings.cpuWindow) window, % of one core (schedstat): player + "
            + "sound server", cells { pulseCell($0.intoSoundServer?.plain) },
            gst.map { "gst-launch playbin pulsesink alone: " + pulseCell($0.intoSoundServer) } ?? "—",
            "player ≤ 0.4 %" + verdict(cpuMet))
        row("CPU playing into PulseAudio as above, then the book boosted (volume 2) and normalised (gain stage and "
            + "limiter at work), same process, % of one core (schedstat): player + sound server",
            cells { pulseCell($0.intoSoundServer?.boosted) }, "—", "—")
        row("the same, right after, with the book's speech compressor on as well, same process, % of one core "
            + "(schedstat): player + sound server",
            cells { pulseCell($0.intoSoundServer?.compressed) }, "—", "—")
        row("the same, right after, with the book's skip silence on as well (its defaults; the bench's tone has no pause to "
            + "shorten: the cost of listening for them), same process, % of one core (schedstat): player + sound server",
            cells { pulseCell($0.intoSoundServer?.skippingSilence) }, "—", "—")
        row("CPU idle, \(settings.idleCPUWindow) window, % of one core", cells { cpuCell($0.idleCPU) })
        func startupCell(_ r: PlayerResult) -> String {
            guard !r.startupMs.isEmpty else { return "—" }
            return String(format: "%.1f [%.1f–%.1f]", median(r.startupMs), r.startupMs.min()!, r.startupMs.max()!)
        }
        let startMet = l.map { !$0.startupMs.isEmpty && median($0.startupMs) < 30 }
        row("Start-up, spawn → MPRIS name owned, median of \(settings.startupRuns) [min–max], ms", cells(startupCell),
            "—", "< 30 ms" + verdict(startMet))
        row("Start-up, first (untimed warm-up) run, ms", cells { String(format: "%.1f", $0.coldStartupMs) })
        func shutdownCell(_ r: PlayerResult) -> String {
            let statuses = Set(r.shutdownStatuses.map { $0.map(String.init) ?? "killed" }).sorted().joined(separator: ",")
            return String(format: "%.1f (exit %@)", median(r.shutdownMs), statuses)
        }
        row("SIGTERM → exit, median, ms", cells(shutdownCell))
        row("OpenUri / ActivateBook / launch → PlaybackStatus Playing (polled every 10 ms), ms", cells {
            String(format: "%.0f", $0.openToPlayingMs) + ($0.loading == .commandLine ? " (spawn with file)"
                : $0.loading == .libraryBook ? " (a book: positions saved)" : "")
        })
        for (index, clients) in settings.concurrency.enumerated() {
            func run(of r: PlayerResult?) -> ConcurrencyResult? {
                r.flatMap { index < $0.concurrency.count ? $0.concurrency[index] : nil }
            }
            func c(_ r: PlayerResult) -> String {
                guard let x = run(of: r) else { return "—" }
                return String(format: "%.0f/s · %d err · p99 %@ µs · player %.1f µs/call · bus %.1f µs/call",
                              x.callsPerSecond, x.errors + x.connectFailures, Report.us(x.latency.p99),
                              x.playerMicrosPerCall, x.busMicrosPerCall)
            }
            // Aims: throughput at least mpv's, daemon CPU per call ≤ 12 µs (VLC's, measured here when the aim was set).
            let (mine, mpv, vlc) = (run(of: l), run(of: results["mpv"]), run(of: results["vlc"]))
            var ratios: [String] = []
            if let mine, let mpv, mpv.callsPerSecond > 0 {
                ratios.append(String(format: "calls/s ÷ mpv's %.2fx", mine.callsPerSecond / mpv.callsPerSecond))
            }
            if let mine, let vlc, vlc.playerMicrosPerCall > 0 {
                ratios.append(String(format: "µs/call ÷ VLC's %.2fx", mine.playerMicrosPerCall / vlc.playerMicrosPerCall))
            }
            let throughputMet = mine.flatMap { m in mpv.map { m.callsPerSecond >= $0.callsPerSecond } }
            let cpuPerCallMet = mine.map { $0.calls > 0 && $0.playerMicrosPerCall <= 12 }
            row("\(clients) concurrent clients, Get for \(settings.concurrencyWindow)", cells(c),
                ratios.isEmpty ? "—" : "Lectern: " + ratios.joined(separator: "; "),
                "calls/s ≥ mpv's" + verdict(throughputMet) + "; ≤ 12 µs/call" + verdict(cpuPerCallMet))
        }
        row("Threads while playing; VmRSS / VmHWM at the end, MB",
            cells { "\($0.threads); \(Report.mb($0.endRSSKB)) / \(Report.mb($0.endHWMKB))" },
            gst.map { "gst-launch playbin alone: \($0.threads) threads" } ?? "—")

        let header = ["metric"] + columns.map(\.title) + ["floor / ratio", "aim"]
        var out = "| " + header.joined(separator: " | ") + " |\n|" + String(repeating: "---|", count: header.count) + "\n"
        for row in rows { out += "| " + row.joined(separator: " | ") + " |\n" }
        return out
    }

    // MARK: JSON

    private func json(_ r: PlayerResult) -> [String: Any] {
        func cpu(_ c: CPUWindow.Result?) -> Any {
            guard let c else { return NSNull() }
            return ["seconds": c.seconds, "percent": c.percent,
                    "schedPercent": c.schedPercent.isNaN ? NSNull() : c.schedPercent as Any]
        }
        func rollup(_ r: ProcStats.Rollup?) -> Any {
            guard let r else { return NSNull() }
            return ["privateDirtyKB": r.privateDirtyKB, "privateCleanKB": r.privateCleanKB, "sharedCleanKB": r.sharedCleanKB]
        }
        return [
            "busName": r.busName,
            "command": r.command,
            "startupMs": r.startupMs, "startupMedianMs": median(r.startupMs), "coldStartupMs": r.coldStartupMs,
            "shutdownMs": r.shutdownMs, "shutdownStatuses": r.shutdownStatuses.map { $0.map { Int($0) as Any } ?? NSNull() },
            "idle": ["rssKB": r.idleRSSKB, "hwmKB": r.idleHWMKB, "cpu": cpu(r.idleCPU), "smapsRollup": rollup(r.idleRollup)],
            "playing": ["rssKB": r.playRSSKB, "hwmKB": r.playHWMKB, "childrenRSSKB": r.playChildrenRSSKB, "cpu": cpu(r.playCPU), "threads": r.threads,
                        "openToPlayingMs": r.openToPlayingMs, "smapsRollup": rollup(r.playRollup)],
            "end": ["rssKB": r.endRSSKB, "hwmKB": r.endHWMKB],
            "playingIntoPulseAudio": ["cpu": cpu(r.intoSoundServer?.plain.player), "serverCpu": cpu(r.intoSoundServer?.plain.server),
                                      "boostedCpu": cpu(r.intoSoundServer?.boosted?.player),
                                      "boostedServerCpu": cpu(r.intoSoundServer?.boosted?.server),
                                      "compressedCpu": cpu(r.intoSoundServer?.compressed?.player),
                                      "compressedServerCpu": cpu(r.intoSoundServer?.compressed?.server),
                                      "skippingSilenceCpu": cpu(r.intoSoundServer?.skippingSilence?.player),
                                      "skippingSilenceServerCpu": cpu(r.intoSoundServer?.skippingSilence?.server)],
            "roundTripsUs": ["pingBus": r.pingBus.json(unit: 1000), "pingPlayer": r.pingPlayer.json(unit: 1000),
                             "get": r.get.json(unit: 1000), "getAll": r.getAll.json(unit: 1000),
                             "echoGet": r.echoGet.json(unit: 1000),
                             "errors": r.roundTripErrors],
            "getP50OverFloor": Double(r.get.p50) / Double(max(r.pingBus.p50, 1)),
            "signalsMs": ["playPause": r.playPause.json(unit: 1e6), "playPauseMissed": r.playPauseMissed,
                          "seek": r.seek.json(unit: 1e6), "seekMissed": r.seekMissed],
            "concurrency": r.concurrency.map { c -> [String: Any] in
                ["clients": c.clients, "seconds": c.seconds, "calls": c.calls, "callsPerSecond": c.callsPerSecond,
                 "errors": c.errors, "connectFailures": c.connectFailures, "latencyUs": c.latency.json(unit: 1000),
                 "playerCPUSeconds": c.playerCPU.schedCPUSeconds, "playerCPUTicksSeconds": c.playerCPU.cpuSeconds,
                 "busCPUSeconds": c.busCPU.schedCPUSeconds,
                 "playerMicrosPerCall": c.playerMicrosPerCall, "busMicrosPerCall": c.busMicrosPerCall]
            },
            "notes": r.notes,
        ]
    }

    func jsonData(environment: [String: String], library: [String: Any]? = nil) -> Data {
        var root: [String: Any] = ["environment": environment,
                                   "settings": ["roundTrips": settings.roundTrips, "warmup": settings.warmup,
                                                "signalIterations": settings.signalIterations,
                                                "startupRuns": settings.startupRuns]]
        for (key, result) in results { root[key] = json(result) }
        if let library { root["library"] = library }
        if let reference {
            root["gstLaunchReference"] = ["command": reference.command, "rssKB": reference.rssKB,
                                          "hwmKB": reference.hwmKB, "threads": reference.threads,
                                          "cpuPercent": reference.cpu?.percent ?? Double.nan,
                                          "schedPercent": reference.cpu?.schedPercent ?? Double.nan,
                                          "pulseSchedPercent": reference.intoSoundServer?.player.schedPercent ?? Double.nan,
                                          "pulseServerSchedPercent": reference.intoSoundServer?.server.schedPercent ?? Double.nan]
        }
        return (try? JSONSerialization.data(withJSONObject: Report.sanitized(root),
                                            options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }

    /// JSON has no NaN or infinity: those become null.
    static func sanitized(_ value: Any) -> Any {
        switch value {
        case let d as Double: return d.isFinite ? d : NSNull()
        case let a as [Any]: return a.map(sanitized)
        case let o as [String: Any]: return o.mapValues(sanitized)
        default: return value
        }
    }
}
