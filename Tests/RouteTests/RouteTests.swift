import DBus
import Foundation
import Testing
import TestSupport

/// lecternd on a private bus, playing with pulsesink to a headless PulseAudio of the test's own; outputs are null
/// sinks plugged and unplugged with pactl. One daemon at a time (timing on a 2-core machine).
@Suite(.serialized) struct RouteTests {
    @Test func unplugPausesAndReplugResumesAtTheSavedPosition() async throws {
        let d = try await RouteDaemon()
        do {
            try await d.startPlaying()
            #expect(try await d.get("ServerConnected", interface: RouteDaemon.output) == .boolean(true))

            let mark = d.signals.count
            let before = ContinuousClock.now
            try await d.unplug()
            let unplugged = ContinuousClock.now
            let paused = await d.signals.wait(since: mark, timeout: .seconds(5)) { RouteDaemon.isStatusChange($0, "Paused") }
            #expect(paused != nil, "no PlaybackStatus Paused after the unplug:\n\(d.log)")
            if let paused {
                print("route latency: pactl start → Paused signal \((paused.time - before).milliseconds) ms, "
                      + "pactl exit → Paused signal \((paused.time - unplugged).milliseconds) ms")
            }
            #expect(try await d.status() == "Paused")
            // The pause comes first (latency), the route event right after it.
            let event = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "output-lost" }
            #expect(event.first?.string == "output-lost")
            #expect(event.count == 5 && event[1].string == "headphones" && event[3].string == "paused")
            let routeSignal = await d.signals.wait(since: mark, timeout: .seconds(2)) { $0.member == "RouteChanged" }
            #expect(routeSignal?.message.arguments.first?.fields?.first?.string == "output-lost")
            let saved = try await d.position()
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await d.position() == saved, "the position moves while paused")

            try await d.plug()
            #expect(try await d.waitFor(d.status) { $0 == "Playing" } == "Playing", "not resumed:\n\(d.log)")
            let resumedAt = try await d.position()
            #expect(resumedAt >= saved - 50_000 && resumedAt <= saved + 1_500_000,
                    "resumed at \(resumedAt) µs, saved \(saved) µs")
            #expect(try await d.waitFor(d.currentOutput) { $0 == "headphones" } == "headphones")
            let returned = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "output-returned" }
            #expect(returned.first?.string == "output-returned" && returned.count == 5 && returned[3].string == "resumed")
            // It really plays again.
            #expect(try await d.waitFor(d.position) { $0 > resumedAt + 200_000 } > resumedAt + 200_000)
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }

    @Test func withUnplugBookmarkAnUnplugLeavesABookmarkOfTheBook() async throws {
        let d = try await RouteDaemon(extraArguments: ["--unplug-bookmark"])
        do {
            let library = "org.lectern.Library1"
            let folder = try await RouteMedia.longFileAsync().deletingLastPathComponent()
            let mark = d.signals.count
            let job = try await d.call("Import", [.string(folder.path), .string("")], interface: library, path: RouteDaemon.lecternPath)
            let finished = await d.signals.wait(since: mark, timeout: .seconds(20)) {
                $0.member == "ImportFinished" && $0.arguments.first == job.first
            }
            let book = try #require(finished?.message.arguments[1].elements?.first?.int64, "import failed:\n\(d.log)")
            try await d.call("ActivateBook", [.int64(book), .boolean(true)], interface: library, path: RouteDaemon.lecternPath)
            #expect(try await d.waitFor(d.status) { $0 == "Playing" } == "Playing")
            #expect(try await d.waitFor(d.currentOutput) { $0 == "headphones" } == "headphones")
            #expect(try await d.waitFor(d.position) { $0 >= 300_000 } >= 300_000)

            try await d.unplug()
            #expect(try await d.waitFor(d.status) { $0 == "Paused" } == "Paused")
            let paused = try await d.position()
            let bookmarks = try await d.waitFor({
                try await d.call("ListBookmarks", [.int64(book)], interface: "org.lectern.Bookmarks1",
                                 path: RouteDaemon.lecternPath).first?.elements ?? []
            }) { !$0.isEmpty }
            #expect(bookmarks.count == 1)
            let bookmark = bookmarks.first?.stringKeyedDictionary ?? [:]
            #expect(bookmark["kind"]?.string == "unplug", "\(bookmark)")
            #expect(abs((bookmark["offset"]?.int64 ?? -1) - paused) < 500_000, "bookmark \(bookmark), paused at \(paused)")
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }

    @Test func aUserPauseInBetweenPreventsTheResume() async throws {
        let d = try await RouteDaemon()
        do {
            try await d.startPlaying()
            try await d.unplug()
            #expect(try await d.waitFor(d.status) { $0 == "Paused" } == "Paused")
            try await d.call("Pause")
            try await d.plug()
            let returned = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "output-returned" }
            #expect(returned.first?.string == "output-returned" && returned.count == 5 && returned[3].string == "none")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await d.status() == "Paused")
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }

    @Test func pauseOnlyPausesAndNeverResumes() async throws {
        let d = try await RouteDaemon(extraArguments: ["--output-policy", "pause-only", "--resume-window", "600"])
        do {
            #expect(try await d.get("Policy", interface: RouteDaemon.output) == .string("pause-only"))
            #expect(try await d.get("ResumeWindow", interface: RouteDaemon.output) == .uint32(600))
            try await d.startPlaying()
            try await d.unplug()
            #expect(try await d.waitFor(d.status) { $0 == "Paused" } == "Paused")
            try await d.plug()
            let returned = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "output-returned" }
            #expect(returned.count == 5 && returned[3].string == "none")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await d.status() == "Paused", "pause-only resumed")
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }

    @Test func policyOffSetOverDBusIgnoresTheUnplug() async throws {
        let d = try await RouteDaemon()
        do {
            #expect(try await d.get("Policy", interface: RouteDaemon.output) == .string("pause-and-resume"))
            #expect(try await d.get("ResumeWindow", interface: RouteDaemon.output) == .uint32(1800))
            try await d.set("Policy", .string("off"))
            try await d.set("ResumeWindow", .uint32(5))
            #expect(try await d.get("Policy", interface: RouteDaemon.output) == .string("off"))
            #expect(try await d.get("ResumeWindow", interface: RouteDaemon.output) == .uint32(5))
            // A bad value is refused and changes nothing.
            await #expect(throws: BusError.self) { try await d.set("Policy", .string("sometimes")) }
            #expect(try await d.get("Policy", interface: RouteDaemon.output) == .string("off"))

            try await d.startPlaying()
            try await d.unplug()
            // The server moves the stream to the speakers; Lectern leaves it playing there.
            #expect(try await d.waitFor(d.currentOutput) { $0 == "speakers" } == "speakers")
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await d.status() == "Playing", "policy off paused")
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }

    @Test func fiftyPlugCyclesWithoutAMiss() async throws {
        let d = try await RouteDaemon()
        do {
            try await d.startPlaying()
            let removals = try await SinkRemovals(server: d.pulse)
            var latencies: [Double] = []
            var fromPactl: [Double] = []
            for cycle in 1...50 {
                let mark = d.signals.count
                let removalMark = removals.count
                let before = ContinuousClock.now
                try await d.unplug()
                let paused = await d.signals.wait(since: mark, timeout: .seconds(5)) { RouteDaemon.isStatusChange($0, "Paused") }
                guard let paused else {
                    Issue.record("cycle \(cycle): no Paused after the unplug\n\(d.log)")
                    break
                }
                fromPactl.append((paused.time - before).milliseconds)
                if let removed = await removals.first(since: removalMark) {
                    latencies.append((paused.time - removed).milliseconds)
                }
                let mark2 = d.signals.count
                try await d.plug()
                guard await d.signals.wait(since: mark2, timeout: .seconds(5), { RouteDaemon.isStatusChange($0, "Playing") }) != nil else {
                    Issue.record("cycle \(cycle): no Playing after the replug\n\(d.log)")
                    break
                }
                _ = try await d.waitFor(d.currentOutput) { $0 == "headphones" }
            }
            #expect(fromPactl.count == 50)
            summarize("sink-removal event (as a libpulse client sees it) → Paused signal", latencies)
            summarize("pactl unload-module start → Paused signal", fromPactl)
            let log = d.log
            let sources = ["sink removed", "stream moved", "device monitor"].map { source in
                "\(source): \(log.components(separatedBy: "seen-by=\(source)").count - 1)"
            }
            print("route: which event paused first over the cycles: \(sources.joined(separator: ", "))")
            #expect(try await d.status() == "Playing")
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }

    @Test func soundServerKilledAndRestarted() async throws {
        let d = try await RouteDaemon()
        do {
            try await d.startPlaying()
            let before = try await d.position()
            await d.pulse.stop()  // SIGKILL
            let killed = ContinuousClock.now
            let status = try await d.waitFor(d.status) { $0 != "Playing" }
            #expect(status != "Playing", "frozen Playing after the server died:\n\(d.log)")
            print("server killed → PlaybackStatus \(status) seen after \((ContinuousClock.now - killed).milliseconds) ms (5 ms polling)")
            // The watcher's pause or pulsesink's error, whichever comes first: Paused, never Stopped.
            #expect(status == "Paused")
            #expect(try await d.waitFor({ try await d.get("ServerConnected", interface: RouteDaemon.output) }) { $0 == .boolean(false) }
                    == .boolean(false))
            #expect(try await d.currentOutput() == "")
            let lost = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "server-lost" }
            #expect(lost.first?.string == "server-lost")
            // Ours or the engine's pause, reported either way as "paused" (there is no "stopped" any more).
            #expect(lost.count == 5 && lost[3].string == "paused", "\(lost)")
            let frozen = try await d.position()
            try await Task.sleep(for: .milliseconds(500))
            // Not moving, and not lost: pulsesink's error after our pause keeps the place.
            #expect(try await d.position() == frozen, "the position moved with no server")
            let later = try await d.status()
            #expect(later == "Paused")
            print("server killed → PlaybackStatus \(later) 0.5 s later")

            try await d.pulse.start()
            try await d.plug()
            let output = try await d.waitFor(d.currentOutput, timeout: .seconds(15)) { !$0.isEmpty }
            #expect(!output.isEmpty, "not reconnected:\n\(d.log)")
            #expect(try await d.get("ServerConnected", interface: RouteDaemon.output) == .boolean(true))
            #expect(try await d.waitFor(d.status) { $0 == "Playing" } == "Playing", "not resumed after the restart:\n\(d.log)")
            let resumedAt = try await d.position()
            // Where the sink had got to: what the dead server still held in its buffer (its latency, a few hundred
            // ms) is played again rather than skipped.
            #expect(resumedAt >= before - 500_000 && resumedAt <= before + 1_500_000, "resumed at \(resumedAt) µs, playing at \(before) µs before the kill")
            #expect(try await d.waitFor(d.position) { $0 > resumedAt + 200_000 } > resumedAt + 200_000,
                    "does not play after the restart:\n\(d.log)")
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }

    @Test func startsWithoutASoundServerAndConnectsLater() async throws {
        let d = try await RouteDaemon()
        do {
            // The fixture's server is up; stop it before anything plays, check the daemon waits and connects.
            await d.pulse.stop()
            #expect(try await d.waitFor({ try await d.get("ServerConnected", interface: RouteDaemon.output) }) { $0 == .boolean(false) }
                    == .boolean(false))
            try await Task.sleep(for: .seconds(1))
            #expect(d.daemon.isRunning)
            try await d.pulse.start()
            #expect(try await d.waitFor(d.currentOutput, timeout: .seconds(15)) { $0 == "speakers" } == "speakers")
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }
}

/// What lecternd asks of the sound server for its stream (Playbin.soundServerBuffer): seconds of sound held ahead,
/// so that the server wakes it a few times a second, and a volume that is the stream's own, so that a change is
/// heard at once rather than after those seconds.
@Suite(.serialized) struct SoundServerStreamTests {
    @Test func theStreamHoldsHalfASecondOrMoreAndItsVolumeIsLecternsVolume() async throws {
        let d = try await RouteDaemon()
        do {
            try await d.startPlaying()
            // pactl: "Buffer Latency: 1000000 usec" for 2 s (GStreamer's default buffer of 200 ms gives 100000 or so).
            let inputs = try await d.pulse.pactl("list", "sink-inputs")
            let latencies = inputs.split(separator: "\n").compactMap { line -> Int? in
                guard line.contains("Buffer Latency:") else { return nil }
                return line.split(separator: " ").compactMap { Int($0) }.first
            }
            #expect(latencies.count == 1, "\(inputs)")
            #expect((latencies.first ?? 0) >= 400_000, "\(inputs)")

            // MPRIS Volume 0.5 is the stream's volume (pulsesink's is cubic: 0.5 → 79 %), at once.
            try await d.set("Volume", .double(0.5), interface: RouteDaemon.player)
            let volume = try await d.waitFor({ try await d.pulse.pactl("list", "sink-inputs") }) { $0.contains("/  79% /") }
            #expect(volume.contains("/  79% /"), "\(volume)")
            #expect(try await d.get("Volume") == .double(0.5))
        } catch {
            await d.finish()
            throw error
        }
        await d.finish()
    }
}

extension RouteDaemon {
    /// Unplugs "headphones" (unloads the null sink module `plug` loaded).
    func unplug() async throws {
        guard let module = headphonesModule.withLock({ $0 }) else { throw RouteTestError("headphones are not plugged in") }
        try await pulse.unplug(module: module)
        headphonesModule.withLock { $0 = nil }
    }

    /// Plugs "headphones" in again.
    func plug() async throws {
        let module = try await pulse.plug("headphones")
        headphonesModule.withLock { $0 = module }
    }
}

/// Prints min / median / p90 / max of `values` (ms).
func summarize(_ what: String, _ values: [Double]) {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return print("route latency, \(what): no samples") }
    print(String(format: "route latency, %@, %d cycles: min %.1f ms, median %.1f ms, p90 %.1f ms, max %.1f ms", what,
                 sorted.count, sorted[0], sorted[sorted.count / 2], sorted[sorted.count * 9 / 10], sorted[sorted.count - 1]))
}
