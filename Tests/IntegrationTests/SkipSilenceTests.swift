import DBus
import Foundation
import Synchronization
import Testing
import TestSupport

extension Integration.Player {
    /// A book's pauses shortened, over the bus: a real daemon playing into a fake sink that keeps time, a generated
    /// book of two 12 s files, each a second of tone, 10 s of silence and a second of tone.
    @Suite struct SkipSilence {
        static let second: Int64 = 1_000_000

        /// The book's folder: two mono WAV files of a second of tone, 10 s of silence, `lastTone` seconds of tone.
        func book(in folder: TemporaryDirectory, lastTone: Int = 1) throws -> URL {
            let book = folder.appending("Pauses")
            try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
            let rate = AudioFiles.sampleRate
            let tone = (0..<rate).map { Int16(12_000 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
            let samples = tone + [Int16](repeating: 0, count: 10 * rate) + Array([[Int16]](repeating: tone, count: lastTone).joined())
            for part in 1...2 { try AudioFiles.wavData(samples).write(to: book.appendingPathComponent("\(part).wav")) }
            return book
        }

        /// A daemon with the book imported, and its id.
        func withBook(_ body: (DaemonFixture, Int64) async throws -> Void) async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-silence")
            defer { folder.remove() }
            let source = try await offThePool { try book(in: folder) }
            try await DaemonFixture.with { d in try await body(d, try #require(try await d.importOK(source).first)) }
        }

        /// One reading of MPRIS Position: asked at `asked`, answered at `answered`, in file `file`.
        struct Reading {
            let asked: ContinuousClock.Instant
            let answered: ContinuousClock.Instant
            let position: Int64
            let file: Int32
        }

        @Test("behind an encoder that drops time segments (wavenc, a synced file sink): pauses shortened, in time too")
        func shortensPausesBehindAnEncoder() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-silence-wav")
            defer { folder.remove() }
            let source = try await offThePool { try book(in: folder, lastTone: 3) }
            let output = folder.appending("out.wav")
            // wavenc drops the upstream segments and sends a BYTES segment of its own: the file sink syncs on the
            // buffers' timestamps alone.
            let sink = "audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc"
                + " ! filesink sync=true location=\(output.path)"
            try await DaemonFixture.with(daemonArguments: ["--audio-sink", sink]) { d in
                let id = try #require(try await d.importOK(source).first)
                try await d.lib("SetBookSettings", [.int64(id), .vardict(["skip_silence": .boolean(true),
                                                                          "silence_amount": .int32(1)])])
                try await d.lib("ActivateBook", [.int64(id), .boolean(false)])
                try await d.waitForStatus("Paused")
                let mark = d.signals.mark
                var readings: [Reading] = []
                /// Reads Position (and the file) every 20 ms until `done` holds of the last reading or `limit` passes.
                func read(for limit: Duration, until done: (Reading) -> Bool) async throws {
                    let end = ContinuousClock.now + limit
                    while ContinuousClock.now < end {
                        let asked = ContinuousClock.now
                        let position = try await d.position()
                        let file = Int32(try await d.listenStatus()["file"]?.int64 ?? -1)
                        readings.append(Reading(asked: asked, answered: .now, position: position, file: file))
                        if done(readings[readings.count - 1]) { return }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }

                // The first file's 10 s pause lasts half a second: its second tone (at 11 s) comes in about 1.5 s,
                // not after the whole pause.
                let started = ContinuousClock.now
                try await d.call("Play")
                try await read(for: .seconds(20)) { $0.file == 0 && $0.position >= 11_300_000 }
                let first = ContinuousClock.now - started
                #expect((readings.last?.position ?? 0) >= 11_300_000 && first < .seconds(7),
                        "\(first) to reach \(readings.last?.position ?? 0) µs in the first file: the pause was waited out")

                // A jump to the second file plays on, and its pause is shortened too.
                let jumped = ContinuousClock.now
                let jump = readings.count
                try await d.call("Next")
                try await read(for: .seconds(20)) { $0.file == 1 && $0.position >= 11_300_000 }
                let second = ContinuousClock.now - jumped
                #expect(readings.last?.file == 1 && (readings.last?.position ?? 0) >= 11_300_000 && second < .seconds(7),
                        "\(second) after Next: \(readings.last.map { "file \($0.file) at \($0.position) µs" } ?? "")")
                #expect(try await d.status() == "Playing")
                try await d.call("Pause")
                try await d.waitForStatus("Paused")

                // Position moved only at the Rate, or with a Seeked (one for each pause, in the file's time).
                let seeked = d.signals.since(mark).filter { $0.seekedPosition != nil }.map { (time: $0.time, position: $0.seekedPosition ?? -1) }
                #expect(seeked.filter { $0.position > 10_000_000 }.count >= 2, "the pauses told: \(seeked.map(\.position))")
                var unannounced: [String] = []
                for (index, (earlier, later)) in zip(readings, readings.dropFirst()).enumerated() where index + 1 != jump {
                    let told = seeked.contains { $0.time > earlier.asked && $0.time <= later.answered + .milliseconds(1000) }
                    guard !told, earlier.file == later.file else { continue }
                    let most = Int64((later.answered - earlier.asked) / .microseconds(1)) + 150_000
                    let moved = later.position - earlier.position
                    if moved < 0 || moved > most { unannounced.append("\(earlier.position) → \(later.position) µs in at most \(most / 1000) ms") }
                }
                #expect(unannounced.isEmpty, "moves without a Seeked: \(unannounced)\nSeeked: \(seeked.map(\.position))")
            }

            // What was written since the jump (the file sink starts the file again): the second file's first tone, its
            // pause no longer than about the threshold, the start of its second tone.
            let samples = try PCM.samples(ofWAV: try Data(contentsOf: output))
            var longest = 0, run = 0
            for sample in samples {
                run = abs(Int(sample)) < 64 ? run + 1 : 0
                longest = max(longest, run)
            }
            let loud = samples.count { abs(Int($0)) >= 64 }
            #expect(Double(longest) / 44_100 < 1, "a pause of \(Double(longest) / 44_100) s was written")
            #expect(Double(loud) / 44_100 > 1.1, "\(Double(loud) / 44_100) s of tone written")
        }

        @Test("the settings read back, bad ones are refused; a 10 s pause plays shortened, positions in the file's time")
        func shortensPauses() async throws {
            try await withBook { d, id in
                var details = try await d.getBook(id)
                #expect(details["skip_silence"] == .boolean(false), "off by default")
                #expect(details["silence_threshold"] == .double(0.5) && details["silence_amount"] == .double(0.75))

                try await d.lib("SetBookSettings", [.int64(id), .vardict(["skip_silence": .boolean(true),
                                                                          "silence_threshold": .double(0.5),
                                                                          "silence_amount": .int32(1)])])
                details = try await d.getBook(id)
                #expect(details["skip_silence"] == .boolean(true) && details["silence_amount"] == .double(1))

                for (bad, says) in [(["silence_threshold": .double(0.05)], "silence_threshold must be between 0.1 and 10 seconds"),
                                    (["silence_amount": .double(1.5)], "silence_amount must be between 0.1 and 1"),
                                    (["silence_amount": .double(.nan)], "silence_amount must be between 0.1 and 1"),
                                    (["skip_silence": .string("yes")], "skip_silence is a boolean"),
                                    (["speed": .double(2), "silence_threshold": .double(11)],
                                     "silence_threshold must be between 0.1 and 10 seconds")]
                    as [([String: DBusValue], String)] {
                    let message = await busErrorMessage { try await d.lib("SetBookSettings", [.int64(id), .vardict(bad)]) }
                    #expect(message == "\(Lib.invalidArgument): \(says)", "\(bad)")
                }
                details = try await d.getBook(id)
                #expect(details["silence_threshold"] == .double(0.5) && details["silence_amount"] == .double(1)
                        && details["speed"] == .double(1), "a refused change changed \(details)")

                // Played from the start: the 10 s pause lasts half a second, so the first file's 12 s go by in about
                // 2.5 s, and the positions seen are the file's own: they pass 11 s, where the second tone starts.
                try await d.lib("ActivateBook", [.int64(id), .boolean(false)])
                try await d.waitForStatus("Paused")
                let started = ContinuousClock.now
                try await d.call("Play")
                var status = try await d.listenStatus()
                var seen: [Int64] = []
                while ContinuousClock.now < started + .seconds(30) {
                    status = try await d.listenStatus()
                    guard status["file"] == .int32(0) else { break }
                    seen.append(status["filePosition"]?.int64 ?? 0)
                    try await Task.sleep(for: .milliseconds(20))
                }
                let took = ContinuousClock.now - started
                #expect(status["file"] == .int32(1), "still in \(status)")
                #expect(took < .seconds(8), "the first file took \(took) to play: its 10 s pause was not shortened")
                #expect(seen == seen.sorted(), "positions went back: \(seen)")
                #expect((seen.last ?? 0) > 11 * Self.second, "the first file's positions stopped at \(seen.last ?? 0) µs")
                try await d.call("Pause")
                try await d.waitForStatus("Paused")

                // The CLI says so, changes it and refuses what the daemon would.
                func expectShown(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                    let result = try await d.lectern("skip-silence")
                    #expect(result.status == 0 && result.stdout == text, "\(result)", sourceLocation: sourceLocation)
                }
                try await expectShown("on: pauses over 0.5 s shortened by 100 % of the rest")
                let set = try await d.lectern("skip-silence", "--threshold", "0.8", "--amount", "0.5")
                #expect(set.status == 0, "\(set)")
                try await expectShown("on: pauses over 0.8 s shortened by 50 % of the rest")
                let refused = try await d.lectern("skip-silence", "--amount", "2")
                #expect(refused.status == 64 && refused.stderr.contains("0.1 to 1"), "\(refused)")
                #expect(try await d.lectern("skip-silence", "off").status == 0)
                try await expectShown("off (when on: pauses over 0.8 s shortened by 50 % of the rest)")
                details = try await d.getBook(id)
                #expect(details["skip_silence"] == .boolean(false) && details["silence_threshold"] == .double(0.8))
            }
        }

        @Test("a shortened pause is announced with Seeked, and the history counts the time it saved, not as listened")
        func announcesAndCountsWhatItSaved() async throws {
            try await withBook { d, id in
                try await d.lib("SetBookSettings", [.int64(id), .vardict(["skip_silence": .boolean(true),
                                                                          "silence_amount": .int32(1)])])
                // A client of its own that hears Seeked only, as a desktop's media card does.
                let seekedSignals = try await d.client.signals(MatchRule(interface: MPRIS.player, member: "Seeked", path: MPRIS.path))
                let heard = Mutex<[Int64]>([])
                let listening = Task {
                    for await signal in seekedSignals { heard.withLock { $0.append(signal.arguments.first?.int64 ?? -1) } }
                }
                defer { listening.cancel() }

                try await d.lib("ActivateBook", [.int64(id), .boolean(false)])
                try await d.waitForStatus("Paused")
                let started = ContinuousClock.now
                try await d.call("Play")
                // Into the second file's last tone (11 s), both pauses shortened, then paused.
                var status = try await d.listenStatus()
                while ContinuousClock.now < started + .seconds(30) {
                    status = try await d.listenStatus()
                    if status["file"] == .int32(1), (status["filePosition"]?.int64 ?? 0) > 11_200_000 { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await d.call("Pause")
                try await d.waitForStatus("Paused")
                let played = ContinuousClock.now - started
                #expect(status["file"] == .int32(1) && played < .seconds(10), "\(played) to reach \(status)")

                // Nothing but the shortened pauses moved the position other than at the Rate: Seeked came for each
                // (one file's, then the other's), with the position past the pause's start (1 s, and its first half
                // second kept), in the file's own time (before its 12 s end); the others say where each file starts.
                let deadline = ContinuousClock.now + .seconds(5)
                while heard.withLock({ $0.count { $0 > 1_500_000 } }) < 2, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let seeked = heard.withLock { $0 }
                let pauses = seeked.filter { $0 > 1_500_000 }
                #expect(pauses.count >= 2 && pauses.allSatisfy { $0 <= 12 * Self.second }, "Seeked: \(seeked)")
                #expect(seeked.allSatisfy { $0 > 1_500_000 || $0 < 100_000 }, "Seeked: \(seeked)")

                // The history: the time skip silence saved is counted apart; listened is less than the book time heard
                // (at 1x), and about the time it took.
                let stats = try await d.history("GetStats", [.int64(0), .int64(0)]).first?.stringKeyedDictionary ?? [:]
                let listened = stats["listened"]?.int64 ?? 0
                let content = stats["content"]?.int64 ?? 0
                let saved = stats["savedBySilence"]?.int64 ?? 0
                #expect(content > 20 * Self.second, "\(stats)")
                #expect(saved > 10 * Self.second, "two 10 s pauses shortened to half a second: \(stats)")
                #expect(listened < content - 10 * Self.second, "listened \(listened), content \(content)")
                #expect(listened < Int64(played / .microseconds(1)) + Self.second, "listened \(listened) in \(played)")
                #expect(abs(stats["savedBySpeed"]?.int64 ?? .max) < 2 * Self.second, "at 1x the speed saved nothing: \(stats)")
                let books = stats["books"]?.elements?.compactMap(\.stringKeyedDictionary) ?? []
                #expect(books.count == 1 && books.first?["book"] == .int64(id) && books.first?["silence"]?.int64 == saved, "\(books)")
                let sessions = try await d.history("ListSessions", [.int64(id), .int64(0), .int64(0)]).first?.elements?
                    .compactMap(\.stringKeyedDictionary) ?? []
                #expect(sessions.compactMap { $0["silence"]?.int64 }.reduce(0, +) == saved, "\(sessions)")

                let text = try await d.lectern("stats")
                #expect(text.status == 0 && text.stdout.contains("skip silence saved 0:1"), "\(text)")
                #expect(text.stdout.contains("Pauses  (skip silence saved 0:1"), "per book: \(text)")
                let help = try await d.lectern("skip-silence", "--help")
                let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")  // wrapped to the terminal
                #expect(words.contains("`lectern stats` shows the time it saved"), "\(help)")
                let csv = try await d.lectern("history", "--csv")
                let row = csv.stdout.components(separatedBy: "\n").dropFirst().first ?? ""
                #expect(Double(row.components(separatedBy: ",").last ?? "").map { $0 > 10 } == true, "\(csv)")
            }
        }
    }
}
