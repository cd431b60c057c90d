import DBus
import Foundation
import Testing
import TestSupport

/// Another sound asking for the output: PulseAudio 16 with module-role-cork, and a real second stream with
/// media.role "phone" (paplay) on the output lecternd plays to. The server mutes Lectern's stream ("music") and asks
/// it to cork while the call plays, and unmutes it and asks it to uncork after. PipeWire 0.3.65 has no role cork
/// (pipewire-pulse refuses module-role-cork, and sends no cork requests): PulseAudio only.
@Suite(.serialized) struct InterruptionRouteTests {
    /// Whether RouteChanged with `kind` came before PlaybackStatus `status`, both after `mark`: a client that reads
    /// LastRouteEvent when it sees the status change reads the event that explains it.
    static func routeEventComesFirst(_ d: RouteDaemon, since mark: Int, _ kind: String, status: String,
                                     sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let messages = d.signals.all.dropFirst(mark).map(\.message)
        let route = messages.firstIndex { $0.member == "RouteChanged" && $0.arguments.first?.fields?.first?.string == kind }
        let change = messages.firstIndex { RouteDaemon.isStatusChange($0, status) }
        guard let route, let change else {
            Issue.record("RouteChanged \(kind): \(route.map(String.init) ?? "none"), \(status): \(change.map(String.init) ?? "none")",
                         sourceLocation: sourceLocation)
            return false
        }
        return route < change
    }

    @Test func aCallPausesAndItsEndResumesWhereItWas() async throws {
        try await withCallDaemon { d in
            try await d.startPlaying()
            let mark = d.signals.count
            let call = try PhoneCall(d)
            defer { call.hangUp() }
            #expect(await d.signals.wait(since: mark, timeout: .seconds(5)) { RouteDaemon.isStatusChange($0, "Paused") } != nil,
                    "no Paused when the call started:\n\(d.log)\n\(d.server.log)")
            let interrupted = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "interrupted" }
            #expect(interrupted.count == 5 && interrupted[1].string == "headphones" && interrupted[3].string == "paused",
                    "\(interrupted)")
            let routeSignal = await d.signals.wait(since: mark, timeout: .seconds(2)) { $0.member == "RouteChanged" }
            #expect(routeSignal?.message.arguments.first?.fields?.first?.string == "interrupted")
            #expect(Self.routeEventComesFirst(d, since: mark, "interrupted", status: "Paused"))
            let saved = try await d.position()
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await d.position() == saved, "the position moves while paused")

            let ended = d.signals.count
            call.hangUp()
            #expect(await d.signals.wait(since: ended, timeout: .seconds(5)) { RouteDaemon.isStatusChange($0, "Playing") } != nil,
                    "not resumed after the call:\n\(d.log)")
            let resumedAt = try await d.position()
            #expect(resumedAt >= saved - 50_000 && resumedAt <= saved + 1_500_000, "resumed at \(resumedAt) µs, saved \(saved) µs")
            let event = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "interruption-ended" }
            #expect(event.count == 5 && event[3].string == "resumed", "\(event)")
            #expect(Self.routeEventComesFirst(d, since: ended, "interruption-ended", status: "Playing"))
            // It really plays again, and is heard: the server unmuted it.
            #expect(try await d.waitFor(d.position) { $0 > resumedAt + 200_000 } > resumedAt + 200_000)
            #expect(try await d.waitFor(d.lecternStreamMuted) { $0 == false } == false)
        }
    }

    @Test func theListenersPauseOrPlayDuringACallWins() async throws {
        try await withCallDaemon { d in
            try await d.startPlaying()
            // Pause during the call: the end of the call does not start it.
            var call = try PhoneCall(d)
            #expect(try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "interrupted" }.first?.string == "interrupted")
            try await d.call("Pause")
            call.hangUp()
            let notResumed = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "interruption-ended" }
            #expect(notResumed.count == 5 && notResumed[3].string == "none", "\(notResumed)")
            #expect(try await d.status() == "Paused")

            // Play during the call: it plays, and is heard although the server muted it for the call.
            try await d.call("Play")
            #expect(try await d.waitFor(d.status) { $0 == "Playing" } == "Playing")
            call = try PhoneCall(d)
            defer { call.hangUp() }
            #expect(try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "interrupted" }.first?.string == "interrupted")
            #expect(try await d.waitFor(d.status) { $0 == "Paused" } == "Paused")
            let before = try await d.position()
            try await d.call("Play")
            #expect(try await d.waitFor(d.status) { $0 == "Playing" } == "Playing")
            #expect(try await d.waitFor(d.lecternStreamMuted) { $0 == false } == false, "muted while the listener plays:\n\(d.log)")
            #expect(try await d.waitFor(d.position) { $0 > before + 300_000 } > before + 300_000)
            // Playing, the stream is not corked: the server sends no uncork at the end of the call, and nothing changes.
            call.hangUp()
            #expect(try await d.waitFor(d.server.streamCount) { $0 == 1 } == 1, "the call's stream is still there")
            #expect(try await d.status() == "Playing")
            #expect(try await d.lecternStreamMuted() == false)
        }
    }

    @Test func unpluggedDuringACallItResumesWhenTheOutputReturnsAndIsHeard() async throws {
        try await withCallDaemon { d in
            try await d.startPlaying()
            let call = try PhoneCall(d)
            defer { call.hangUp() }
            #expect(try await d.waitFor(d.status) { $0 == "Paused" } == "Paused")
            let saved = try await d.position()
            try await d.unplug()
            let lost = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "output-lost" }
            #expect(lost.count == 5 && lost[3].string == "paused", "\(lost)")
            // The call ends with the output gone: nothing resumes on the speakers.
            call.hangUp()
            #expect(try await d.waitFor(d.server.streamCount) { $0 == 1 } == 1, "the call's stream is still there")
            #expect(try await d.status() == "Paused")
            try await d.plug()
            #expect(try await d.waitFor(d.status) { $0 == "Playing" } == "Playing", "not resumed:\n\(d.log)")
            let resumedAt = try await d.position()
            #expect(resumedAt >= saved - 50_000 && resumedAt <= saved + 1_500_000, "resumed at \(resumedAt) µs, saved \(saved) µs")
            #expect(try await d.waitFor(d.lecternStreamMuted) { $0 == false } == false, "muted after the call:\n\(d.log)")
        }
    }

    @Test func ignoredInterruptionsPlayOnAndAreHeard() async throws {
        try await withCallDaemon(extraArguments: ["--interruptions", "ignore"]) { d in
            #expect(try await d.get("Interruptions", interface: RouteDaemon.output).string == "ignore")
            try await d.startPlaying()
            let call = try PhoneCall(d)
            defer { call.hangUp() }
            let event = try await d.waitFor(d.lastRouteEvent) { $0.first?.string == "interrupted" }
            #expect(event.count == 5 && event[3].string == "none", "\(event)")
            #expect(try await d.status() == "Playing")
            #expect(try await d.waitFor(d.lecternStreamMuted) { $0 == false } == false, "muted during the call:\n\(d.log)")
            let position = try await d.position()
            #expect(try await d.waitFor(d.position) { $0 > position + 300_000 } > position + 300_000)
            // Set back over D-Bus, the next call pauses.
            try await d.set("Interruptions", .string("pause"))
            call.hangUp()
            #expect(try await d.waitFor(d.server.streamCount) { $0 == 1 } == 1, "the call's stream is still there")
            let next = try PhoneCall(d)
            defer { next.hangUp() }
            #expect(try await d.waitFor(d.status) { $0 == "Paused" } == "Paused")
        }
    }

    /// The benchmark's figures (scripts/interruptions.sh): 20 calls (`LECTERN_INTERRUPTION_CALLS`), each paused and
    /// resumed; times from the phone stream's start to the Paused signal and from its end to the Playing signal.
    /// Recorded, never asserted.
    @Test func twentyCallsEachPausedAndResumed() async throws {
        let calls = ProcessInfo.processInfo.environment["LECTERN_INTERRUPTION_CALLS"].flatMap { Int($0) } ?? 20
        try await withCallDaemon { d in
            try await d.startPlaying()
            var toPaused: [Double] = [], toPlaying: [Double] = []
            for cycle in 1...max(1, calls) {
                let mark = d.signals.count
                let started = ContinuousClock.now
                let call = try PhoneCall(d)
                guard let paused = await d.signals.wait(since: mark, timeout: .seconds(5), { RouteDaemon.isStatusChange($0, "Paused") })
                else {
                    call.hangUp()
                    Issue.record("call \(cycle): no Paused\n\(d.log)")
                    break
                }
                toPaused.append((paused.time - started).milliseconds)
                let mark2 = d.signals.count
                let hungUp = ContinuousClock.now
                call.hangUp()
                guard let playing = await d.signals.wait(since: mark2, timeout: .seconds(5), { RouteDaemon.isStatusChange($0, "Playing") })
                else {
                    Issue.record("call \(cycle): no Playing after it\n\(d.log)")
                    break
                }
                toPlaying.append((playing.time - hungUp).milliseconds)
            }
            #expect(toPlaying.count == max(1, calls))
            Figures.record("interruptions PulseAudio", "phone stream start → Paused signal", summarize("phone stream start → Paused signal", toPaused))
            Figures.record("interruptions PulseAudio", "phone stream end → Playing signal", summarize("phone stream end → Playing signal", toPlaying))
            #expect(try await d.status() == "Playing")
        }
    }
}

/// A ``RouteDaemon`` on PulseAudio with module-role-cork loaded (its defaults: streams with media.role "phone" cork
/// those with "music" or "video" on the same sink).
private func withCallDaemon(extraArguments: [String] = [], sourceLocation: SourceLocation = #_sourceLocation,
                            _ body: (RouteDaemon) async throws -> Void) async throws {
    try await withRouteDaemon(.pulseAudio, extraArguments: extraArguments, sourceLocation: sourceLocation) { d in
        try await d.server.pactl("load-module", "module-role-cork")
        try await body(d)
    }
}

/// A call: paplay playing silence with media.role "phone" to "headphones", the output lecternd plays to, until
/// ``hangUp()`` (its stream goes with the process).
private struct PhoneCall {
    let process: Subprocess

    init(_ d: RouteDaemon) throws {
        process = try Subprocess("paplay", ["--raw", "--rate=44100", "--channels=2", "--format=s16le", "--device=headphones",
                                            "--property=media.role=phone", "--client-name=phone", "/dev/zero"],
                                 environment: d.server.environment, stdout: .null, stderr: .null)
    }

    /// Ends the call (SIGKILL: its stream goes with its connection; the process is reaped when this goes);
    /// idempotent.
    func hangUp() { process.kill() }
}

extension SoundServer {
    /// How many playback streams the server has (`pactl list short sink-inputs`).
    func streamCount() async throws -> Int { try await streamSinks().count }
}

extension RouteDaemon {
    /// Whether the sound server mutes lecternd's stream (`pactl list sink-inputs`: the one of application "Lectern").
    func lecternStreamMuted() async throws -> Bool? {
        let streams = try await server.pactl("list", "sink-inputs").components(separatedBy: "Sink Input #")
        guard let ours = streams.first(where: { $0.contains("application.name = \"Lectern\"") }) else { return nil }
        return ours.contains("Mute: yes")
    }
}
