import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// Boost and loudness normalisation, heard through a WAV file sink: a real daemon, real GStreamer, the output's
    /// loudness measured by FFmpeg's EBU R128 meter.
    @Suite struct Loudness {
        /// What the daemon's output is written to: mono 16-bit WAV (the file sink does not keep time: a book renders
        /// at once, then playback stops).
        static func sink(_ output: URL) -> String {
            "audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc ! filesink location=\(output.path)"
        }

        static let fullScale = 32_768.0
        /// The limiter's ceiling: -1 dBFS.
        static let ceiling = 0.891_250_938 * fullScale

        static func rms(_ samples: [Int16]) -> Double {
            (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
        }

        /// Plays `file` to its end at `volume` (its book's, set before it is opened) and returns what was rendered.
        func render(_ file: URL, volume: Double, in folder: TemporaryDirectory) async throws -> [Int16] {
            let output = folder.appending("out-\(volume).wav")
            try await DaemonFixture.with(daemonArguments: ["--audio-sink", Self.sink(output)]) { d in
                let book = try await d.importOK(file)[0]
                try await d.lib("SetBookSettings", [.int64(book), .vardict(["volume": .double(volume)])])
                try await d.openURI(file)
                #expect(try await d.waitForStatus("Stopped", timeout: .seconds(20)) == "Stopped")
            }
            return try PCM.samples(ofWAV: try Data(contentsOf: output))
        }

        @Test("at 100 % not a sample changes; at 200 % the sound is louder and no sample clips")
        func boostWithoutClipping() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-boost")
            defer { folder.remove() }
            // Peaks at -6 dBFS: doubled, the loudest parts would reach full scale.
            let source = folder.appending("tone.wav")
            try R128.tone(source, seconds: 2, peak: 0.5)
            let original = try PCM.samples(ofWAV: try Data(contentsOf: source))

            let unity = try await render(source, volume: 1, in: folder)
            #expect(unity == original, "at 100 % the output differs from the file")

            let boosted = try await render(source, volume: 2, in: folder)
            try #require(boosted.count == original.count)
            let peak = boosted.map { abs(Double($0)) }.max() ?? 0
            #expect(peak <= Self.ceiling + 1, "a sample at \(peak), above -1 dBFS")
            #expect(!boosted.contains(Int16.max) && !boosted.contains(Int16.min))
            let gain = Self.rms(boosted) / Self.rms(original)
            #expect(gain > 1.4, "200 % is only \(gain) times as loud")
            // The quiet parts are doubled exactly (the limiter is at rest there, and recovered).
            let quietest = original.indices.filter { abs(Int(original[$0])) > 100 && abs(Int(original[$0])) < 2_000 }.suffix(200)
            let ratios = quietest.map { Double(boosted[$0]) / Double(original[$0]) }
            #expect(ratios.allSatisfy { abs($0 - 2) < 0.05 }, "quiet samples scaled by \(ratios.prefix(5))")
        }

        /// A book folder of two tone files peaking at `peak`.
        func book(_ name: String, peak: Double, in folder: TemporaryDirectory) throws -> URL {
            let book = folder.appending(name)
            try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
            for part in 1...2 { try R128.tone(book.appendingPathComponent("\(part).wav"), seconds: 3, peak: peak) }
            return book
        }

        /// Activates `book`, playing, and waits until it has started and then played to its end (the status a book
        /// played before ended with is no sign of this one's end).
        func playToEnd(_ book: Int64, _ d: DaemonFixture) async throws {
            let mark = try await d.signals.barrier()
            try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
            let playing = await d.signals.waitFor(since: mark, timeout: .seconds(20)) {
                $0.playerChanges["PlaybackStatus"] == .string("Playing")
            }
            let started = try #require(playing, "the book did not start")
            let stopped = await d.signals.waitFor(since: started.index + 1, timeout: .seconds(20)) {
                $0.playerChanges["PlaybackStatus"] == .string("Stopped")
            }
            try #require(stopped != nil, "the book did not play to its end")
        }

        /// The samples the file sink wrote to `output`, once it holds a whole WAV file: after the player says Stopped,
        /// the pipeline may still be closing it (or, for a rate set by a flushing seek, writing it again).
        func samples(renderedTo output: URL) async throws -> [Int16] {
            let deadline = ContinuousClock.now + .seconds(10)
            var last: Data?
            while true {
                let data = try Data(contentsOf: output)
                if data == last, let samples = try? PCM.samples(ofWAV: data) { return samples }
                guard ContinuousClock.now < deadline else { return try PCM.samples(ofWAV: data) }
                last = data
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        /// Waits until the book's loudness is measured (or could not be); its GetBook.
        func waitForMeasurement(_ book: Int64, _ d: DaemonFixture) async throws -> [String: DBusValue] {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let details = try await d.getBook(book)
                if details["loudness"] != nil || details["loudness_problem"] != nil { return details }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw FixtureError("book \(book) was not measured")
        }

        @Test("two books recorded 16 LU apart play within 1 LU of each other normalised, and as recorded when it is off")
        func normalisation() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-normalise")
            defer { folder.remove() }
            let quiet = try book("Quiet", peak: 0.04, in: folder)
            let loud = try book("Loud", peak: 0.25, in: folder)
            let recorded = try await offThePool { try [quiet, loud].map { try R128.integratedLoudness(of: $0.appendingPathComponent("1.wav")) } }
            try #require(recorded[1] - recorded[0] > 15, "the books are \(recorded) LUFS")
            let output = folder.appending("out.wav")
            var heard: [Double] = []
            try await DaemonFixture.with(daemonArguments: ["--audio-sink", Self.sink(output)]) { d in
                for (folder, level) in zip([quiet, loud], recorded) {
                    let id = try #require(try await d.importOK(folder).first)
                    // Off (the default): the book as recorded, sample for sample.
                    try await playToEnd(id, d)
                    let source = try PCM.samples(ofWAV: try Data(contentsOf: folder.appendingPathComponent("1.wav")))
                    let rendered = try await samples(renderedTo: output)
                    #expect(Array(rendered.prefix(source.count)) == source, "\(folder.lastPathComponent) changed with normalisation off")

                    try await d.lib("SetBookSettings", [.int64(id), .vardict(["normalise": .boolean(true)])])
                    let details = try await waitForMeasurement(id, d)
                    let measured = try #require(details["loudness"]?.double, "\(details["loudness_problem"] ?? .string(""))")
                    #expect(abs(measured - level) < 0.5, "measured \(measured) LUFS, FFmpeg \(level)")
                    #expect(details["normalise"] == .boolean(true))
                    #expect(abs((details["loudness_gain"]?.double ?? 0) - (-18 - measured)) < 0.01)
                    try await playToEnd(id, d)
                    _ = try await samples(renderedTo: output)
                    heard.append(try await offThePool { try R128.integratedLoudness(of: output) })

                    let shown = try await d.lectern("loudness")
                    #expect(shown.stdout.hasPrefix("normalisation on: "), "\(shown)")
                }
            }
            #expect(abs(heard[0] - heard[1]) <= 1, "normalised, the books are heard at \(heard) LUFS")
            #expect(heard.allSatisfy { abs($0 - -18) <= 1 }, "normalised, the books are heard at \(heard) LUFS, not -18")
        }

        @Test("boosted, a two-file book stays louder and unclipped across the gapless handover, and at 1.5x speed")
        func boostWithTheHandoverAndSpeed() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-boost-book")
            defer { folder.remove() }
            let both = try book("Both", peak: 0.5, in: folder)
            let source = try PCM.samples(ofWAV: try Data(contentsOf: both.appendingPathComponent("1.wav")))
            let output = folder.appending("out.wav")
            func expectBoosted(_ rendered: [Int16], _ what: String) {
                let peak = rendered.map { abs(Double($0)) }.max() ?? 0
                #expect(peak <= Self.ceiling + 1, "\(what): a sample at \(peak), above -1 dBFS")
                let gain = Self.rms(rendered) / Self.rms(source)
                #expect(gain > 1.4, "\(what): 200 % is only \(gain) times as loud")
            }
            func expectSoundAt(_ boundary: Int, in rendered: [Int16], _ what: String) {
                let around = rendered[max(0, boundary - 2_048)..<min(rendered.count, boundary + 2_048)].map { abs(Int($0)) }
                #expect(around.max() ?? 0 > 2_000, "\(what): the sound stops at the handover")
            }
            try await DaemonFixture.with(daemonArguments: ["--audio-sink", Self.sink(output)]) { d in
                // Both files, one after the other without a gap.
                let bothID = try #require(try await d.importOK(both).first)
                try await d.lib("SetBookSettings", [.int64(bothID), .vardict(["volume": .double(2)])])
                try await playToEnd(bothID, d)
                let rendered = try await samples(renderedTo: output)
                #expect(rendered.count == 2 * source.count, "\(rendered.count) samples, not \(2 * source.count)")
                expectBoosted(rendered, "across the handover")
                expectSoundAt(source.count, in: rendered, "at 1x")

                // At 1.5x: scaletempo, then the gain stage; the second file at the speed from its start, with nothing
                // flushed at the handover (a flush would start the WAV file over).
                try await d.lib("SetBookSettings", [.int64(bothID), .vardict(["volume": .double(2), "speed": .double(1.5)])])
                try await playToEnd(bothID, d)
                let faster = try await samples(renderedTo: output)
                let expected = Double(2 * source.count) / 1.5
                #expect(abs(Double(faster.count) - expected) < expected * 0.05, "\(faster.count) samples, not about \(expected)")
                expectBoosted(faster, "at 1.5x")
                expectSoundAt(source.count * 2 / 3, in: faster, "at 1.5x")
            }
        }

        @Test("a book that cannot be measured says why and plays at unity gain; settings out of range change nothing")
        func badInput() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-loudness-bad")
            defer { folder.remove() }
            let silent = folder.appending("Silent")
            try FileManager.default.createDirectory(at: silent, withIntermediateDirectories: true)
            try AudioFiles.wavData([Int16](repeating: 0, count: 44_100 * 3)).write(to: silent.appendingPathComponent("1.wav"))
            let damaged = folder.appending("Damaged")
            try FileManager.default.createDirectory(at: damaged, withIntermediateDirectories: true)
            try R128.tone(damaged.appendingPathComponent("1.wav"), seconds: 2, peak: 0.3)
            let broken = damaged.appendingPathComponent("2.wav")
            try R128.tone(broken, seconds: 2, peak: 0.3)
            try await DaemonFixture.with { d in
                let silentID = try #require(try await d.importOK(silent).first)
                let damagedID = try #require(try await d.importOK(damaged).first)
                // Damaged after the import: its header stays, its sound is gone.
                let handle = try FileHandle(forWritingTo: broken)
                try handle.truncate(atOffset: 30)
                try handle.close()

                try await d.lib("SetBookSettings", [.int64(silentID), .vardict(["normalise": .boolean(true)])])
                let silence = try await waitForMeasurement(silentID, d)
                #expect(silence["loudness"] == nil)
                #expect(silence["loudness_problem"]?.string?.contains("silence") == true, "\(silence)")
                #expect(silence["loudness_gain"] == .double(0))

                try await d.lib("SetBookSettings", [.int64(damagedID), .vardict(["normalise": .boolean(true)])])
                let failed = try await waitForMeasurement(damagedID, d)
                #expect(failed["loudness_problem"]?.string?.contains("2.wav") == true, "\(failed)")
                #expect(failed["loudness_gain"] == .double(0))
                let shown = try await d.lectern("loudness", "--book", "\(damagedID)")
                #expect(shown.stdout.contains("not measurable") && shown.stdout.contains("unity gain"), "\(shown)")

                // Out of range or of the wrong type: an error, and nothing changed.
                let before = try await d.getBook(silentID)
                for settings: [String: DBusValue] in [["volume": .double(10.5)], ["normalise": .string("yes")],
                                                      ["normalise": .boolean(false), "volume": .double(-1)]] {
                    let name = await d.errorName { try await d.lib("SetBookSettings", [.int64(silentID), .vardict(settings)]) }
                    #expect(name == "org.lectern.Error.InvalidArgument", "\(settings): \(name ?? "no error")")
                }
                #expect(try await d.getBook(silentID) == before)
                let name = await d.errorName { try await d.lib("MeasureLoudness", [.int64(9_999)]) }
                #expect(name == "org.lectern.Error.NotFound")
                #expect(try await d.lectern("loudness", "loud").status != 0)
                #expect(try await d.lectern("volume", "1001%").status != 0)
                _ = try await d.lectern("volume", "150%")
                #expect(try await d.get("Volume") == .double(1.5))
            }
        }
    }
}
