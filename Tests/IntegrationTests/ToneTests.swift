import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player.Loudness {
    /// A mono 16-bit WAV file (44.1 kHz) of a tone alternating each second between loud (peaking at 0.5: about -9 dBFS
    /// RMS) and quiet (0.03: about -33 dBFS), starting loud: an uneven recording.
    static func uneven(_ url: URL, seconds: Int, frequency: Double = 440) throws {
        let rate = 44_100
        let samples = (0..<seconds * rate).map { n -> Int16 in
            let peak = (n / rate) % 2 == 0 ? 0.5 : 0.03
            return Int16((32_767 * peak * sin(2 * Double.pi * frequency * Double(n) / Double(rate))).rounded())
        }
        try AudioFiles.wavData(samples).write(to: url)
    }

    /// How far apart, in dB, the loud and the quiet parts of `samples` are: the RMS of 100 ms blocks, its 75th
    /// percentile over its 25th (half the tone is loud, half quiet: the middle of each half).
    static func range(_ samples: [Int16]) -> Double {
        let block = 4_410
        let levels = stride(from: 0, to: samples.count - block, by: block).map { start in
            20 * log10(max(1, rms(Array(samples[start..<start + block]))) / fullScale)
        }.sorted()
        guard levels.count >= 20 else { return 0 }
        return levels[levels.count * 3 / 4] - levels[levels.count / 4]
    }

    /// Imports the book folder `book`, plays it to its end with `settings` and returns it and what was rendered.
    func render(book: URL, _ settings: [String: DBusValue], to output: URL,
                _ d: DaemonFixture) async throws -> (id: Int64, samples: [Int16]) {
        let id = try #require(try await d.importOK(book).first)
        try await d.lib("SetBookSettings", [.int64(id), .vardict(settings)])
        try await playToEnd(id, d)
        return (id, try await samples(renderedTo: output))
    }

    @Test("the compressor narrows an uneven recording's range, at 1x across the handover and at 1.5x; off is exact")
    func compressor() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-compressor")
        defer { folder.remove() }
        // Each file a tone of its own: the same sound twice would be one file found again (its fingerprint).
        var frequency = 400.0
        func book(_ name: String, files: Int) throws -> URL {
            let book = folder.appending(name)
            try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
            for part in 1...files {
                frequency += 40
                try Self.uneven(book.appendingPathComponent("\(part).wav"), seconds: 4, frequency: frequency)
            }
            return book
        }
        let offBook = try book("Off", files: 1)
        let source = try PCM.samples(ofWAV: try Data(contentsOf: offBook.appendingPathComponent("1.wav")))
        let recorded = Self.range(source)
        #expect(recorded > 22, "the recording's range is \(recorded) dB")
        let output = folder.appending("out.wav")
        try await DaemonFixture.with(daemonArguments: ["--audio-sink", Self.sink(output)]) { d in
            // Off (the default): sample for sample as recorded.
            let off = try await render(book: offBook, [:], to: output, d).samples
            #expect(off == source, "with the compressor off the output differs from the file")

            // On: two files one after the other without a gap, then one at 1.5x (scaletempo, then the gain stage).
            let (id, both) = try await render(book: try book("Both", files: 2), ["compress": .boolean(true)], to: output, d)
            #expect(try await d.getBook(id)["files"] == .uint32(2))
            #expect(both.count == 2 * source.count, "\(both.count) samples, not \(2 * source.count)")
            let fast = try await render(book: try book("Fast", files: 1), ["compress": .boolean(true), "speed": .double(1.5)],
                                        to: output, d).samples
            let expected = Double(source.count) / 1.5
            #expect(abs(Double(fast.count) - expected) < expected * 0.05, "\(fast.count) samples, not about \(expected)")
            for (rendered, what) in [(both, "across the handover"), (fast, "at 1.5x")] {
                let range = Self.range(rendered)
                #expect(range < recorded - 6, "\(what): \(range) dB from quiet to loud, recorded \(recorded) dB")
                let peak = rendered.map { abs(Double($0)) }.max() ?? 0
                #expect(peak <= Self.ceiling + 1, "\(what): a sample at \(peak), above -1 dBFS")
                // The quiet parts come up, the loud ones down: nothing is silenced.
                #expect(Self.rms(rendered) > Self.rms(source) * 0.5, "\(what): RMS \(Self.rms(rendered)), recorded \(Self.rms(source))")
            }
            let boundary = source.count
            let around = both[max(0, boundary - 2_048)..<min(both.count, boundary + 2_048)].map { abs(Int($0)) }
            #expect(around.max() ?? 0 > 500, "the sound stops at the handover")

            // The setting is the book's, on the API and the CLI; a bad value changes nothing.
            #expect(try await d.getBook(id)["compress"] == .boolean(true))
            let shown = try await d.lectern("compressor", "--book", "\(id)")
            #expect(shown.stdout == "compressor on", "\(shown)")
            #expect(try await d.lectern("compressor", "off", "--book", "\(id)").status == 0)
            #expect(try await d.getBook(id)["compress"] == .boolean(false))
            let before = try await d.getBook(id)
            for settings: [String: DBusValue] in [["compress": .string("yes")], ["compress": .boolean(true), "speed": .double(4)]] {
                let name = await d.errorName { try await d.lib("SetBookSettings", [.int64(id), .vardict(settings)]) }
                #expect(name == "org.lectern.Error.InvalidArgument", "\(settings): \(name ?? "no error")")
            }
            #expect(try await d.getBook(id) == before)
            #expect(try await d.lectern("compressor", "loud").status != 0)
        }
    }

    @Test("two books recorded 16 LU apart play within 1 LU of a loudness target of -24 LUFS")
    func anotherTarget() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-target")
        defer { folder.remove() }
        let books = [try book("Quiet", peak: 0.04, in: folder), try book("Loud", peak: 0.25, in: folder)]
        let output = folder.appending("out.wav")
        var heard: [Double] = []
        try await DaemonFixture.with(daemonArguments: ["--audio-sink", Self.sink(output), "--loudness-target=-24"]) { d in
            for book in books {
                let id = try #require(try await d.importOK(book).first)
                try await d.lib("SetBookSettings", [.int64(id), .vardict(["normalise": .boolean(true)])])
                let details = try await waitForMeasurement(id, d)
                #expect(details["loudness_target"] == .double(-24))
                try await playToEnd(id, d)
                _ = try await samples(renderedTo: output)
                heard.append(try R128.integratedLoudness(of: output))
            }
            let shown = try await d.lectern("loudness")
            #expect(shown.stdout.hasSuffix(" to -24 LUFS"), "\(shown)")
        }
        #expect(heard.allSatisfy { abs($0 - -24) <= 1 }, "normalised to -24, the books are heard at \(heard) LUFS")
    }

    @Test("a reload that changes the loudness target changes the current book's level at once")
    func targetReloaded() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-target-reload")
        defer { folder.remove() }
        let book = folder.appending("Book")
        try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
        try R128.tone(book.appendingPathComponent("1.wav"), seconds: 10, peak: 0.1)
        let config = folder.appending("config.yaml")
        try "loudness-target: -26\n".write(to: config, atomically: true, encoding: .utf8)
        let output = folder.appending("out.wav")
        // In real time (the file sink syncs to the clock), so that the reload comes while the book plays.
        let sink = Self.sink(output).replacingOccurrences(of: "filesink", with: "filesink sync=true")
        try await DaemonFixture.with(daemonArguments: ["--audio-sink", sink, "--config", config.path]) { d in
            let id = try #require(try await d.importOK(book).first)
            try await d.lib("SetBookSettings", [.int64(id), .vardict(["normalise": .boolean(true)])])
            _ = try await waitForMeasurement(id, d)
            let mark = try await d.signals.barrier()
            try await d.lib("ActivateBook", [.int64(id), .boolean(true)])
            // The WAV file grows in real time (its 44-byte header, then 2 bytes a sample): 1.5 s played.
            func rendered() -> Int {
                let size = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int) ?? 0
                return max(0, size - 44) / 2
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while rendered() < 66_150, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            try #require(rendered() >= 66_150, "the book did not play")
            try "loudness-target: -14\n".write(to: config, atomically: true, encoding: .utf8)
            d.daemon.signal(SIGHUP)
            let reloaded = await d.signals.waitFor(since: mark) { $0.interface == Config.interface && $0.member == "Reloaded" }
            #expect(reloaded?.arguments.first?.stringArray == ["loudness-target"], "\(String(describing: reloaded))")
            let reloadedAt = rendered()
            #expect(try await d.getBook(id)["loudness_target"] == .double(-14))
            let stopped = await d.signals.waitFor(since: mark, timeout: .seconds(30)) {
                $0.playerChanges["PlaybackStatus"] == .string("Stopped")
            }
            try #require(stopped != nil, "the book did not play to its end")
            let heard = try await samples(renderedTo: output)
            // The first second at the old target; from a second after the reload to the end, the new one.
            let rate = 44_100
            let after = reloadedAt + rate
            try #require(after + 2 * rate <= heard.count, "the reload came at sample \(reloadedAt) of \(heard.count)")
            for (part, target) in [(Array(heard.prefix(rate)), -26.0), (Array(heard[after...]), -14.0)] {
                let file = folder.appending("part.wav")
                try AudioFiles.wavData(part).write(to: file)
                let loudness = try R128.integratedLoudness(of: file)
                #expect(abs(loudness - target) <= 1, "heard at \(loudness) LUFS, not \(target)")
            }
        }
    }
}
