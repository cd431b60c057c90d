import DBus
import Foundation
import Testing
import TestSupport

/// PCM WAV files as sample arrays: written and read by the gapless test.
enum PCM {
    static let rate = 44_100

    /// A continuous rising sweep of `count` samples starting at sample `offset` of the sweep (so that two pieces
    /// join without a step), at 0.5 full scale: 200 Hz at sample 0, rising by 800 Hz a second. Unlike a steady
    /// tone, it matches itself at one alignment only, so a lossy copy can be lined up with it.
    static func sweep(_ count: Int, from offset: Int) -> [Int16] {
        (offset..<offset + count).map { n in
            let t = Double(n) / Double(rate)
            return Int16(16_383 * sin(2 * Double.pi * (200 * t + 400 * t * t)))
        }
    }

    /// The samples of a mono 16-bit WAV file (its "data" chunk; to the end of the file when the chunk's size
    /// was never written).
    static func samples(ofWAV data: Data) throws -> [Int16] {
        let bytes = [UInt8](data)
        guard bytes.count >= 12, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF" else { throw FixtureError("not a WAV file") }
        var at = 12
        while at + 8 <= bytes.count {
            let id = String(decoding: bytes[at..<at + 4], as: UTF8.self)
            let size = Int(UInt32(bytes[at + 4]) | UInt32(bytes[at + 5]) << 8 | UInt32(bytes[at + 6]) << 16 | UInt32(bytes[at + 7]) << 24)
            if id == "data" {
                let end = size == 0 || at + 8 + size > bytes.count ? bytes.count : at + 8 + size
                return stride(from: at + 8, to: end - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
            }
            at += 8 + size + (size & 1)
        }
        throw FixtureError("the WAV file has no data chunk")
    }
}

extension Integration.Player {
    /// Gapless, measured: a two-file book rendered through a file sink comes out as the files' samples one
    /// after the other, nothing inserted or lost at the boundary.
    @Suite struct Gapless {
        /// Lossless formats: the rendered book is the source, sample for sample.
        @Test(arguments: ["wav", "flac"])
        func aTwoFileBookRendersWithoutAGap(_ format: String) async throws {
            let (first, second, rendered) = try await renderTwoFileBook(format)
            let expected = first + second
            let inserted = rendered.count - expected.count
            #expect(inserted == 0, "\(format): \(inserted) samples inserted (\(rendered.count) rendered, \(expected.count) in the files)")
            // Sample for sample, across the boundary.
            let boundary = first.count
            let window = max(0, boundary - 64)..<min(expected.count, boundary + 64)
            #expect(rendered.count >= window.upperBound && Array(rendered[window]) == Array(expected[window]),
                    "the samples around the boundary differ")
            #expect(rendered == expected)
        }

        /// Lossy formats as FFmpeg writes them: nothing inserted between the files, nothing lost, the second file's sound
        /// where the first one's stops (lined up with the source, not equal to it).
        /// - MP3 (libmp3lame): the encoder delay and padding recorded in the LAME tag under FFmpeg's own version string
        ///   are trimmed: exactly the source's samples (untrimmed, each file starts ~1,105 samples late).
        /// - AAC in MP4: the priming is skipped by the edit list, the last packet decoded and clipped where the edit
        ///   ends (GStreamer 1.22 alone drops the last packet: ~1,009 samples lost a file, or, decoded whole, up to a
        ///   frame of padding inserted); what remains is 1 sample at each file's start (`slack`).
        @Test(arguments: [("mp3", 0), ("m4a", 1)])
        func aLossyTwoFileBookRendersWithoutAGap(_ format: String, slack: Int) async throws {
            let (first, second, rendered) = try await renderTwoFileBook(format)
            let expected = first + second
            let inserted = rendered.count - expected.count
            #expect(inserted >= 0 && inserted <= 2 * slack,
                    "\(format): \(inserted) samples inserted (\(rendered.count) rendered, \(expected.count) in the files)")
            // Each file lines up with its part of the source within `slack` samples (an untrimmed MP3 encoder delay
            // shows as an offset of about 1,105), and around the boundary the sound never goes quiet (a gap shows as a
            // run of silence).
            let boundary = first.count
            try #require(rendered.count >= expected.count)
            let firstOffset = bestOffset(of: rendered, against: expected, in: boundary - 4_096..<boundary - 2_048, within: 1_200)
            let secondOffset = bestOffset(of: rendered, against: expected, in: boundary + 2_048..<boundary + 4_096, within: 1_200)
            #expect((0...slack).contains(firstOffset), "\(format): the first file is \(firstOffset) samples off")
            #expect((0...2 * slack).contains(secondOffset), "\(format): the second file is \(secondOffset) samples off")
            let quiet = longestRun(in: Array(rendered[boundary - 2_048..<boundary + 2_048])) { abs(Int($0)) < 300 }
            #expect(quiet < 20, "\(format): \(quiet) quiet samples in a row around the boundary")
        }

        /// Encodes the two pieces of the sweep (1.3 s + 0.9 s, cut mid-wave) as a two-file book in `format`, plays it
        /// through a WAV file sink and returns both pieces and what was rendered.
        private func renderTwoFileBook(_ format: String) async throws -> (first: [Int16], second: [Int16], rendered: [Int16]) {
            let folder = try TemporaryDirectory(prefix: "lectern-gapless")
            defer { folder.remove() }
            let first = PCM.sweep(57_330, from: 0)
            let second = PCM.sweep(39_690, from: 57_330)
            let book = folder.appending("book")
            try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
            try await offThePool {
                for (name, samples) in [("1", first), ("2", second)] {
                    let wav = (format == "wav" ? book : folder.url).appendingPathComponent("\(name).wav")
                    try AudioFiles.wavData(samples).write(to: wav)
                    let encoded = book.appendingPathComponent("\(name).\(format)").path
                    switch format {
                    case "flac":
                        try AudioFiles.gst("filesrc location=\(wav.path) ! wavparse ! audioconvert ! flacenc ! filesink location=\(encoded)")
                    case "mp3":
                        try AudioFiles.ffmpeg(["-i", wav.path, "-c:a", "libmp3lame", encoded])
                    case "m4a":
                        try AudioFiles.ffmpeg(["-i", wav.path, "-c:a", "aac", encoded])
                    default:
                        break
                    }
                }
            }
            let output = folder.appending("out.wav")
            let sink = "audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc"
                + " ! filesink location=\(output.path)"
            try await DaemonFixture.with(daemonArguments: ["--audio-sink", sink]) { d in
                try await d.openURI(book)
                // The file sink does not keep time: the whole book renders at once, then playback stops.
                #expect(try await d.waitForStatus("Stopped", timeout: .seconds(20)) == "Stopped")
            }
            return (first, second, try PCM.samples(ofWAV: try Data(contentsOf: output)))
        }

        /// The shift of `signal` against `reference` over `window` (signal[i + shift] ≈ reference[i]) with the least
        /// squared difference, among shifts of at most `limit` samples either way.
        private func bestOffset(of signal: [Int16], against reference: [Int16], in window: Range<Int>, within limit: Int) -> Int {
            var best = (shift: 0, error: Double.infinity)
            for shift in -limit...limit {
                var error = 0.0
                for i in window {
                    let difference = Double(signal[i + shift]) - Double(reference[i])
                    error += difference * difference
                }
                if error < best.error { best = (shift, error) }
            }
            return best.shift
        }

        private func longestRun(in samples: [Int16], where matches: (Int16) -> Bool) -> Int {
            var longest = 0
            var current = 0
            for sample in samples {
                current = matches(sample) ? current + 1 : 0
                longest = max(longest, current)
            }
            return longest
        }
    }
}
