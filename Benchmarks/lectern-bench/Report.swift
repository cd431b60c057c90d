import Foundation

/// The Markdown table and the JSON document.
struct Report {
    let lectern: PlayerResult?
    let mpv: PlayerResult?
    let reference: PipelineReference?
    let settings: Settings

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

    private func cell(_ r: PlayerResult?, _ body: (PlayerResult) -> String) -> String {
        r.map(body) ?? "—"
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
        let l = lectern, m = mpv
        func floorRatio(_ pick: (PlayerResult) -> Samples) -> String {
            var parts: [String] = []
            for (name, r) in [("Lectern", l), ("mpv", m)] {
                guard let r, pick(r).count > 0, r.pingBus.count > 0 else { continue }
                var part = "\(name) \(Report.ratio(pick(r).p50, r.pingBus.p50))"
                if r.echoGet.count > 0 { part += " (\(Report.ratio(pick(r).p50, r.echoGet.p50)) of 2-hop)" }
                parts.append(part)
            }
            return parts.isEmpty ? "—" : "p50 ÷ Ping floor p50: " + parts.joined(separator: "; ")
        }
        let gst = reference

        let getMet = l.map { Double($0.get.p50) <= 1.5 * Double($0.pingBus.p50) }
        rows.append(["Get(Player, PlaybackStatus) p50 / p95 / p99, µs", cell(l) { triple($0.get) },
                     cell(m) { triple($0.get) }, floorRatio(\.get), "p50 ≤ 1.5x floor" + verdict(getMet)])
        rows.append(["GetAll(Player) p50 / p95 / p99, µs", cell(l) { triple($0.getAll) }, cell(m) { triple($0.getAll) },
                     floorRatio(\.getAll), "—"])
        rows.append(["Peer.Ping to the player (answered by its D-Bus library) p50 / p95 / p99, µs",
                     cell(l) { triple($0.pingPlayer) }, cell(m) { triple($0.pingPlayer) }, floorRatio(\.pingPlayer), "—"])
        rows.append(["Peer.Ping to dbus-daemon (the floor) p50 / p95 / p99, µs, same bus as the player",
                     cell(l) { triple($0.pingBus) }, cell(m) { triple($0.pingBus) }, "floor (one hop)", "—"])
        rows.append(["Get to a minimal libdbus responder process (two-hop floor) p50 / p95 / p99, µs",
                     cell(l) { triple($0.echoGet) }, cell(m) { triple($0.echoGet) }, floorRatio(\.echoGet), "—"])

        func signalCell(_ s: Samples, _ missed: Int) -> String {
            s.count == 0 ? "— (\(missed) missed)"
                : "\(Report.ms(s.p50)) / \(Report.ms(s.p99))" + (missed > 0 ? " (\(missed) missed)" : "")
        }
        let ppMet = l.map { $0.playPause.count > 0 && $0.playPause.p50 <= 2_000_000 && $0.playPause.p99 <= 2_000_000 }
        rows.append(["PlayPause → PropertiesChanged(PlaybackStatus) p50 / p99, ms",
                     cell(l) { signalCell($0.playPause, $0.playPauseMissed) },
                     cell(m) { signalCell($0.playPause, $0.playPauseMissed) }, "—", "≤ 2 ms" + verdict(ppMet)])
        let seekMet = l.map { $0.seek.count > 0 && $0.seek.p50 <= 2_000_000 && $0.seek.p99 <= 2_000_000 }
        rows.append(["Seek(±1 s) → Seeked p50 / p99, ms", cell(l) { signalCell($0.seek, $0.seekMissed) },
                     cell(m) { signalCell($0.seek, $0.seekMissed) }, "—", "≤ 2 ms" + verdict(seekMet)])

        let rssMet = l.map { $0.playRSSKB > 0 && $0.playRSSKB < 30 * 1024 }
        rows.append(["VmRSS / VmHWM, playing 5 s, MB", cell(l) { "\(Report.mb($0.playRSSKB)) / \(Report.mb($0.playHWMKB))" },
                     cell(m) { "\(Report.mb($0.playRSSKB)) / \(Report.mb($0.playHWMKB))" },
                     gst.map { "gst-launch playbin alone: \(Report.mb($0.rssKB)) / \(Report.mb($0.hwmKB))" } ?? "—",
                     "RSS < 30 MB" + verdict(rssMet)])
        rows.append(["VmRSS / VmHWM, idle (nothing loaded), MB",
                     cell(l) { "\(Report.mb($0.idleRSSKB)) / \(Report.mb($0.idleHWMKB))" },
                     cell(m) { "\(Report.mb($0.idleRSSKB)) / \(Report.mb($0.idleHWMKB))" }, "—", "—"])
        func cpuCell(_ c: CPUWindow.Result?) -> String {
            guard let c else { return "—" }
            return String(format: "%.2f %% (schedstat %.2f %%)", c.percent, c.schedPercent)
        }
        let cpuMet = l.flatMap { $0.playCPU.map { $0.percent <= 0.4 } }
        rows.append(["CPU playing, \(settings.cpuWindow) window, % of one core (utime+stime)",
                     cell(l) { cpuCell($0.playCPU) }, cell(m) { cpuCell($0.playCPU) },
                     gst.map { "gst-launch playbin alone: " + cpuCell($0.cpu) } ?? "—", "≤ 0.4 %" + verdict(cpuMet)])
        rows.append(["CPU idle, \(settings.idleCPUWindow) window, % of one core", cell(l) { cpuCell($0.idleCPU) },
                     cell(m) { cpuCell($0.idleCPU) }, "—", "—"])
        func startupCell(_ r: PlayerResult) -> String {
            guard !r.startupMs.isEmpty else { return "—" }
            return String(format: "%.1f [%.1f–%.1f]", median(r.startupMs), r.startupMs.min()!, r.startupMs.max()!)
        }
        let startMet = l.map { !$0.startupMs.isEmpty && median($0.startupMs) < 30 }
        rows.append(["Start-up, spawn → MPRIS name owned, median of \(settings.startupRuns) [min–max], ms",
                     cell(l, startupCell), cell(m, startupCell), "—", "< 30 ms" + verdict(startMet)])
        rows.append(["Start-up, first (untimed warm-up) run, ms", cell(l) { String(format: "%.1f", $0.coldStartupMs) },
                     cell(m) { String(format: "%.1f", $0.coldStartupMs) }, "—", "—"])
        func shutdownCell(_ r: PlayerResult) -> String {
            let statuses = Set(r.shutdownStatuses.map { $0.map(String.init) ?? "killed" }).sorted().joined(separator: ",")
            return String(format: "%.1f (exit %@)", median(r.shutdownMs), statuses)
        }
        rows.append(["SIGTERM → exit, median, ms", cell(l, shutdownCell), cell(m, shutdownCell), "—", "—"])
        rows.append(["OpenUri / launch → PlaybackStatus Playing (polled every 10 ms), ms",
                     cell(l) { String(format: "%.0f", $0.openToPlayingMs) },
                     cell(m) { String(format: "%.0f", $0.openToPlayingMs) + " (spawn with file)" }, "—", "—"])
        for (index, clients) in settings.concurrency.enumerated() {
            func c(_ r: PlayerResult) -> String {
                guard index < r.concurrency.count else { return "—" }
                let x = r.concurrency[index]
                return String(format: "%.0f/s · %d err · p99 %@ µs · player %.1f µs/call · bus %.1f µs/call",
                              x.callsPerSecond, x.errors + x.connectFailures, Report.us(x.latency.p99),
                              x.playerMicrosPerCall, x.busMicrosPerCall)
            }
            rows.append(["\(clients) concurrent clients, Get for \(settings.concurrencyWindow)", cell(l, c), cell(m, c),
                         "—", "—"])
        }
        rows.append(["Threads while playing; VmRSS / VmHWM at the end, MB",
                     cell(l) { "\($0.threads); \(Report.mb($0.endRSSKB)) / \(Report.mb($0.endHWMKB))" },
                     cell(m) { "\($0.threads); \(Report.mb($0.endRSSKB)) / \(Report.mb($0.endHWMKB))" },
                     gst.map { "gst-launch playbin alone: \($0.threads) threads" } ?? "—", "—"])

        var out = "| metric | Lectern | mpv (mpv-mpris) | floor / ratio | aim |\n|---|---|---|---|---|\n"
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
        return [
            "busName": r.busName,
            "startupMs": r.startupMs, "startupMedianMs": median(r.startupMs), "coldStartupMs": r.coldStartupMs,
            "shutdownMs": r.shutdownMs, "shutdownStatuses": r.shutdownStatuses.map { $0.map { Int($0) as Any } ?? NSNull() },
            "idle": ["rssKB": r.idleRSSKB, "hwmKB": r.idleHWMKB, "cpu": cpu(r.idleCPU)],
            "playing": ["rssKB": r.playRSSKB, "hwmKB": r.playHWMKB, "cpu": cpu(r.playCPU), "threads": r.threads,
                        "openToPlayingMs": r.openToPlayingMs],
            "end": ["rssKB": r.endRSSKB, "hwmKB": r.endHWMKB],
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
        if let lectern { root["lectern"] = json(lectern) }
        if let mpv { root["mpv"] = json(mpv) }
        if let library { root["library"] = library }
        if let reference {
            root["gstLaunchReference"] = ["command": reference.command, "rssKB": reference.rssKB,
                                          "hwmKB": reference.hwmKB, "threads": reference.threads,
                                          "cpuPercent": reference.cpu?.percent ?? Double.nan,
                                          "schedPercent": reference.cpu?.schedPercent ?? Double.nan]
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
