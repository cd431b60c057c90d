import DBus
import Foundation
import Testing
import TestSupport

/// MPRIS's rule for Position, held on a real sound server's stream: it never moves except by the clock at Rate, or
/// with a Seeked signal. Clients that draw a position (KDE Plasma's applet and lock screen, KDE Connect, Rygel, playerctl)
/// read it after a Seeked or a status change and reckon it forward at Rate; a step back, or a jump, without a Seeked
/// shows a wrong place until they read again. pulsesink starts its output a buffer after a start or a seek (on these
/// null sinks, 0.1-1.5 s), which is what the position must wait for.
@Suite(.serialized) struct PositionRuleTests {
    /// One reading of Position: asked at `asked`, answered at `answered`.
    struct Reading {
        let asked: ContinuousClock.Instant
        let answered: ContinuousClock.Instant
        let position: Int64
    }

    /// How far apart a move and its Seeked may arrive (the reply to a Get read just after the move may come first).
    static let seekedDelay = Duration.milliseconds(100)
    /// How late the test's own receipt of a Seeked may be stamped when the Seeked says the position read: the signal is
    /// stamped by the test's task that reads it, which a loaded machine (the suite at full width) delays by a few
    /// hundred milliseconds. Commands are 2 s apart: no other command's Seeked falls in it.
    static let seekedReceiptDelay = Duration.milliseconds(1000)
    /// How far clients' reckoning may be from the position: lecternd's own allowance, and a reading's round trip.
    static let allowance: Int64 = 150_000

    @Test(arguments: SoundServerKind.allCases)
    func positionMovesOnlyAtTheRateOrWithSeekedThroughStartsAndSeeks(_ kind: SoundServerKind) async throws {
        try await withRouteDaemon(kind) { d in
            let mark = d.signals.count
            var readings: [Reading] = []
            var settled: [Int] = []  // the last reading before each command, and the last one
            func read(for span: Duration) async throws {
                defer { settled.append(readings.count - 1) }
                let end = ContinuousClock.now + span
                while ContinuousClock.now < end {
                    let asked = ContinuousClock.now
                    let position = try await d.position()
                    readings.append(Reading(asked: asked, answered: .now, position: position))
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            try await d.call("OpenUri", [.string(try await RouteMedia.longFileAsync().absoluteString)])
            _ = try await d.waitFor(d.status) { $0 == "Playing" }
            try await read(for: .seconds(2.5))
            try await d.call("Seek", [.int64(10_000_000)])
            try await read(for: .seconds(2))
            let track = try await d.get("Metadata").stringKeyedDictionary?["mpris:trackid"] ?? .objectPath(ObjectPath("/")!)
            try await d.call("SetPosition", [track, .int64(30_000_000)])
            try await read(for: .seconds(2))
            try await d.call("Seek", [.int64(-20_000_000)])
            try await read(for: .seconds(2))

            let seeked = d.signals.all.dropFirst(mark).filter { $0.message.member == "Seeked" }
                .map { (time: $0.time, position: $0.message.arguments.first?.int64 ?? -1) }
            #expect(seeked.count >= 4, "a Seeked for the start, each seek and SetPosition: \(seeked.map(\.position))")

            // Between two readings with no Seeked in between, the position moved back not at all, and ahead no more than
            // the Rate (1) allows in the longest time that can have passed between them.
            var unannounced: [String] = []
            for (earlier, later) in zip(readings, readings.dropFirst()) {
                let told = seeked.contains { signal in
                    signal.time > earlier.asked && (signal.time <= later.answered + Self.seekedDelay
                        || signal.time <= later.answered + Self.seekedReceiptDelay
                            && abs(later.position - signal.position) <= Self.allowance + Int64((later.answered - earlier.asked).milliseconds * 1000))
                }
                guard !told else { continue }
                let most = Int64((later.answered - earlier.asked).milliseconds * 1000) + Self.allowance
                let moved = later.position - earlier.position
                if moved < 0 || moved > most {
                    unannounced.append("\(earlier.position) → \(later.position) µs in at most \(most / 1000) ms")
                }
            }
            #expect(unannounced.isEmpty, "moves without a Seeked, \(kind): \(unannounced)\n\(seeked.map(\.position))")

            // A client reckoning from the last Seeked at Rate is not ahead of the place played, once each move settled
            // (the last reading before each command, and the last one): the output that started late was told. (Behind
            // it is no fault of lecternd's: the test reckons from when the signal arrived, which a loaded machine
            // delays, and the position is read after it is asked for.)
            for reading in settled.filter(readings.indices.contains).map({ readings[$0] }) {
                guard let last = seeked.last(where: { $0.time < reading.asked }) else { continue }
                let reckoned = last.position + Int64((reading.asked - last.time).milliseconds * 1000)
                #expect(reckoned - reading.position <= Self.allowance + 50_000,
                        "\(kind): a client reckoning from Seeked \(last.position) µs shows \(reckoned) µs, Position is \(reading.position) µs")
            }
        }
    }
}
