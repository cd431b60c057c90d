import DBus
import Foundation
import Testing
import TestSupport

extension Integration {
    /// Boost, heard through a WAV file sink: a real daemon, real GStreamer.
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

        /// Plays `file` to its end at `volume` (set before it is opened, through MPRIS) and returns what was rendered.
        func render(_ file: URL, volume: Double, in folder: TemporaryDirectory) async throws -> [Int16] {
            let output = folder.appending("out-\(volume).wav")
            try await DaemonFixture.with(daemonArguments: ["--audio-sink", Self.sink(output)]) { d in
                try await d.set("Volume", .double(volume))
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
    }
}
