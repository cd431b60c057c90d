import CGStreamer
import CGStreamerShims
import Foundation
import Testing
import TestSupport
@testable import GStreamer

extension PlaybackTests {
    /// Skip silence (lecternsilence, Sources/CGStreamerShims/silence.c), heard through a file sink (what comes out) and
    /// a clock-synced fake sink (positions against what is being played).
    @Suite("Skip silence")
    struct SilenceTests {
        /// A book with known pauses: tones of 1 s around pauses of 2 s, 0.3 s and 3 s (9.3 s). The tones' amplitude
        /// grows with the file's time (``fileTime(ofPeak:)``), so what is heard tells where in the file it is.
        static let layout: [(tone: Bool, seconds: Double)] = [
            (true, 1), (false, 2), (true, 1), (false, 0.3), (true, 1), (false, 3), (true, 1),
        ]
        static let rate = 44_100.0
        /// 20 ms, in samples.
        static let shortestPause = 882

        /// The peak amplitude (full scale 1) of the tones at file time `t` (up to 10 s; the same after).
        static func amplitude(at t: Double) -> Double { 0.05 + 0.09 * min(t, 10) }

        /// The file time at which the tones have the peak `peak` (full scale 1).
        static func fileTime(ofPeak peak: Double) -> Double { (peak - 0.05) / 0.09 }

        /// Mono 16-bit samples of `layout`: a sine at `frequency` in the tones, digital silence in the pauses.
        static func samples(_ layout: [(tone: Bool, seconds: Double)], frequency: Double = 440) -> [Int16] {
            var samples: [Int16] = []
            for part in layout {
                for _ in 0..<Int((part.seconds * rate).rounded()) {
                    let t = Double(samples.count) / rate
                    samples.append(part.tone ? Int16((32_767 * amplitude(at: t) * sin(2 * .pi * frequency * t)).rounded()) : 0)
                }
            }
            return samples
        }

        /// The length of each tone and pause in `samples`, in order: a pause is a run of at least 20 ms of samples
        /// below -54 dBFS (a tone's zero crossings last a sample or two; slowed down, its end flickers for some ms).
        static func parts(of samples: [Int16]) -> [(tone: Bool, seconds: Double)] {
            var parts: [(tone: Bool, seconds: Double)] = []
            var index = 0
            while index < samples.count {
                var end = index
                while end < samples.count, abs(Int(samples[end])) < 64 { end += 1 }
                if end - index >= Self.shortestPause || end == samples.count {
                    parts.append((false, Double(end - index) / rate))
                    index = end
                    continue
                }
                // A tone: up to the next run of quiet samples long enough to be a pause.
                var quiet = 0
                end = index
                while end < samples.count, quiet < Self.shortestPause {
                    quiet = abs(Int(samples[end])) < 64 ? quiet + 1 : 0
                    end += 1
                }
                let toneEnd = quiet >= Self.shortestPause ? end - quiet : end
                if let last = parts.last, last.tone {
                    parts[parts.count - 1].seconds += Double(toneEnd - index) / rate
                } else {
                    parts.append((true, Double(toneEnd - index) / rate))
                }
                index = toneEnd
            }
            return parts.filter { $0.seconds > 0 }
        }

        /// What a pause of `pause` seconds of the file lasts once shortened, heard at `speed`: its first `threshold`,
        /// then of each 200 ms beyond it the first (1 - `amount`), then the 20 ms (of listening) before the sound.
        static func shortened(_ pause: Double, threshold: Double, amount: Double, speed: Double) -> Double {
            let lookahead = 0.02 * speed
            guard pause > threshold + lookahead else { return pause / speed }
            let beyond = pause - threshold - lookahead
            let periods = (beyond / 0.2).rounded(.down)
            let kept = periods * 0.2 * (1 - amount) + min(beyond - periods * 0.2, 0.2 * (1 - amount))
            return (threshold + kept + lookahead) / speed
        }

        let files: AudioFixtures
        let book: URL
        /// The same layout at 660 Hz: the next file at the gapless handover.
        let nextBook: URL
        /// A 0.1 s tone, 20 s of silence, a 0.1 s tone.
        let nearlySilent: URL
        /// ``book`` in 32-bit floats, stereo.
        let floatBook: URL
        static let nearlySilentLayout: [(tone: Bool, seconds: Double)] = [(true, 0.1), (false, 20), (true, 0.1)]

        init() async throws {
            files = try await AudioFixtures.shared()
            let directory = try await GeneratedFiles.directory("silence-books") { root in
                try AudioFiles.wavData(Self.samples(Self.layout)).write(to: root.appendingPathComponent("book.wav"))
                try AudioFiles.wavData(Self.samples(Self.layout, frequency: 660)).write(to: root.appendingPathComponent("next.wav"))
                try AudioFiles.wavData(Self.samples(Self.nearlySilentLayout)).write(to: root.appendingPathComponent("nearly-silent.wav"))
                try AudioFiles.gst("filesrc location=\(root.appendingPathComponent("book.wav").path) ! wavparse ! audioconvert"
                                   + " ! audio/x-raw,format=F32LE,channels=2 ! wavenc", to: root.appendingPathComponent("book-f32.wav"))
            }
            book = directory.appendingPathComponent("book.wav")
            nextBook = directory.appendingPathComponent("next.wav")
            nearlySilent = directory.appendingPathComponent("nearly-silent.wav")
            floatBook = directory.appendingPathComponent("book-f32.wav")
        }

        // MARK: Rendering

        /// What comes out of a playbin playing `url` (then `next`, gaplessly) at `speed` with `skipping`: mono 16-bit
        /// samples written raw to a file (no header to rewrite: the rate seek flushes the prerolled sink), and the
        /// listening time the skipper says it removed.
        func render(_ url: URL, next: URL? = nil, speed: Double = 1, skipping: SilenceSkipping?,
                    setEvenIfOff: Bool = true) async throws -> (samples: [Int16], removed: Duration) {
            let output = files.scratchURL("silence.raw")
            defer { try? FileManager.default.removeItem(at: output) }
            let log = EventLog<PlaybinEvent>()
            let removed: Duration
            do {
                let playbin = try Playbin(
                    audioSink: "audioconvert ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! filesink sync=false location=\(output.path)"
                ) { event, _ in log.append(event) }
                if skipping != nil || setEvenIfOff {
                    playbin.skipSilence = SilenceSkipping(threshold: .seconds(1), amount: 0.3)
                    playbin.skipSilence = skipping
                }
                #expect(playbin.skipSilence == skipping)
                playbin.uri = url.absoluteString
                playbin.nextURI = next?.absoluteString
                playbin.setState(.paused)
                try await log.waitFor("preroll") { $0 == .asyncDone }
                if speed != 1 {
                    let mark = log.count
                    #expect(playbin.seek(to: .zero, rate: speed))
                    try await log.waitFor(after: mark, "the rate seek's async-done") { $0 == .asyncDone }
                }
                playbin.setState(.playing)
                try await log.waitFor(timeout: .seconds(30), "end of stream") { $0 == .endOfStream }
                removed = playbin.silenceRemoved
                playbin.setState(.null)
            }
            let data = try Data(contentsOf: output)
            let samples = data.withUnsafeBytes { raw in
                (0..<raw.count / 2).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self)) }
            }
            return (samples, removed)
        }

        /// Checks what was rendered with skipping against the same render without it (`reference`: scaletempo's own
        /// output, whose tone edges move by a few milliseconds at speeds other than 1): every tone whole, long pauses
        /// shortened as designed, short ones untouched, and the removed time is what is missing.
        func expectShortened(_ rendered: (samples: [Int16], removed: Duration), reference: [Int16], parts count: Int,
                             speed: Double, threshold: Double, amount: Double,
                             sourceLocation: SourceLocation = #_sourceLocation) {
            let parts = Self.parts(of: rendered.samples)
            let original = Self.parts(of: reference)
            #expect(original.count == count, "the reference has \(original)", sourceLocation: sourceLocation)
            #expect(parts.count == original.count, "\(parts) against \(original)", sourceLocation: sourceLocation)
            guard parts.count == original.count else { return }
            for (part, source) in zip(parts, original) {
                #expect(part.tone == source.tone, sourceLocation: sourceLocation)
                if source.tone {
                    #expect(abs(part.seconds - source.seconds) <= 0.002,
                            "a tone of \(source.seconds) s came out at \(part.seconds) s", sourceLocation: sourceLocation)
                } else {
                    let expected = Self.shortened(source.seconds * speed, threshold: threshold, amount: amount, speed: speed)
                    // Windows of 10 ms: the window a tone ends in is kept whole.
                    #expect(part.seconds >= expected - 0.005 && part.seconds <= expected + 0.015,
                            "a pause of \(source.seconds) s came out at \(part.seconds) s, not \(expected) s",
                            sourceLocation: sourceLocation)
                }
            }
            let missing = Double(reference.count - rendered.samples.count) / Self.rate
            #expect(abs(missing - rendered.removed.seconds) <= 0.001,
                    "removed \(rendered.removed), but \(missing) s are missing", sourceLocation: sourceLocation)
        }

        @Test("long pauses are shortened, tones kept whole, at every speed", arguments: [
            (1.0, 1.0), (2.0, 1.0), (2.0, 0.5), (0.5, 0.75), (3.0, 0.75),
        ])
        func shortensPauses(speed: Double, amount: Double) async throws {
            let reference = try await render(book, speed: speed, skipping: nil, setEvenIfOff: false)
            let rendered = try await render(book, speed: speed, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: amount))
            expectShortened(rendered, reference: reference.samples, parts: Self.layout.count, speed: speed, threshold: 0.5, amount: amount)
            if speed == 1, amount == 1 {
                // What a listener hears: the tones whole, the 2 s and 3 s pauses at 0.5 s (and the 20 ms before the
                // next tone), the 0.3 s one untouched; 1.48 s of the 2 s pause and 2.48 s of the 3 s one removed.
                let heard = Self.parts(of: rendered.samples).map(\.seconds)
                let expected = [1, 0.52, 1, 0.3, 1, 0.52, 1]
                #expect(zip(heard, expected).allSatisfy { abs($0 - $1) <= 0.01 }, "\(heard)")
                #expect(isClose(rendered.removed, to: .milliseconds(3_960), within: .milliseconds(10)))
            }
            if speed == 2, amount == 1 {
                // Twice as fast: tones of 0.5 s (scaletempo's own edges move them by up to 15 ms), pauses of 0.25 s,
                // the short one 0.15 s.
                let heard = Self.parts(of: rendered.samples).map(\.seconds)
                let expected = [0.5, 0.25, 0.5, 0.15, 0.5, 0.25, 0.5]
                #expect(zip(heard, expected).allSatisfy { abs($0 - $1) <= 0.03 }, "\(heard)")
            }
        }

        @Test("floats in stereo are shortened the same")
        func floatStereo() async throws {
            let reference = try await render(floatBook, speed: 1.5, skipping: nil, setEvenIfOff: false)
            let rendered = try await render(floatBook, speed: 1.5, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: 0.75))
            expectShortened(rendered, reference: reference.samples, parts: Self.layout.count, speed: 1.5, threshold: 0.5, amount: 0.75)
        }

        @Test("off, not a sample changes", arguments: [1.0, 2.0])
        func offIsPassthrough(speed: Double) async throws {
            let untouched = try await render(book, speed: speed, skipping: nil, setEvenIfOff: false)
            let off = try await render(book, speed: speed, skipping: nil)
            #expect(off.samples.count == untouched.samples.count)
            #expect(off.samples == untouched.samples, "turned off, the output differs from the element never set")
            #expect(off.removed == .zero)
            if speed == 1 {
                #expect(untouched.samples == Self.samples(Self.layout), "at speed 1 the output is the file")
            }
        }

        @Test("a file nearly all silence plays to its end at the shortest pause; both tones are heard")
        func nearlyAllSilence() async throws {
            let reference = try await render(nearlySilent, skipping: nil, setEvenIfOff: false).samples
            for amount in [0.75, 1] {
                let rendered = try await render(nearlySilent, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: amount))
                expectShortened(rendered, reference: reference, parts: 3, speed: 1, threshold: 0.5, amount: amount)
            }
        }

        @Test("across the gapless handover the next file's pauses are shortened too")
        func handoverRender() async throws {
            let reference = try await render(book, next: nextBook, skipping: nil, setEvenIfOff: false).samples
            let rendered = try await render(book, next: nextBook, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: 1))
            // The last tone of the first file and the first of the next one are one tone of 2 s.
            expectShortened(rendered, reference: reference, parts: 2 * Self.layout.count - 1, speed: 1, threshold: 0.5, amount: 1)
            #expect(reference == Self.samples(Self.layout) + Self.samples(Self.layout, frequency: 660))
        }

        // MARK: Positions

        /// A playbin on a clock-synced fake sink named "heard" (or `sink`), its events recorded.
        func makePlaybin(_ url: URL, skipping: SilenceSkipping?,
                         sink: String = "audioconvert ! audio/x-raw,format=S16LE,channels=1 ! fakesink name=heard sync=true")
            throws -> (Playbin, EventLog<PlaybinEvent>) {
            let log = EventLog<PlaybinEvent>()
            let playbin = try Playbin(audioSink: sink) { event, _ in log.append(event) }
            playbin.skipSilence = skipping
            playbin.uri = url.absoluteString
            return (playbin, log)
        }

        /// The file time of the tone the fake sink is playing (its last buffer's peak), nil in a pause.
        static func heard(_ playbin: Playbin) -> Double? {
            guard let bin = lectern_gst_object_get_object(UnsafeMutableRawPointer(playbin.control.element), "audio-sink") else { return nil }
            defer { gst_object_unref(bin) }
            guard let sink = gst_bin_get_by_name(bin.assumingMemoryBound(to: GstBin.self), "heard") else { return nil }
            defer { gst_object_unref(UnsafeMutableRawPointer(sink)) }
            var value = GValue()
            g_value_init(&value, gst_sample_get_type())
            defer { g_value_unset(&value) }
            g_object_get_property(UnsafeMutablePointer<GObject>(OpaquePointer(sink)), "last-sample", &value)
            guard let sample = g_value_get_boxed(&value), let buffer = gst_sample_get_buffer(OpaquePointer(sample)) else { return nil }
            var map = GstMapInfo()
            guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else { return nil }
            defer { gst_buffer_unmap(buffer, &map) }
            let peak = UnsafeRawBufferPointer(start: map.data, count: Int(map.size)).withMemoryRebound(to: Int16.self) { samples in
                samples.map { abs(Int($0)) }.max() ?? 0
            }
            return peak > 1_000 ? fileTime(ofPeak: Double(peak) / 32_767) : nil
        }

        /// A position and what was heard when it was read.
        struct Sample: CustomStringConvertible {
            let position: Duration
            let heard: Double?
            var description: String { "\(position.seconds)@\(heard.map { String(format: "%.3f", $0) } ?? "-")" }
        }

        /// Samples the position (and what is heard) every 20 ms until `done` or the end of the stream.
        func sample(_ playbin: Playbin, _ log: EventLog<PlaybinEvent>, after mark: Int = 0, timeout: Duration = .seconds(20),
                    until done: (Duration) -> Bool = { _ in false }) async throws -> [Sample] {
            var samples: [Sample] = []
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                let heard = Self.heard(playbin)
                if let position = playbin.position {
                    samples.append(Sample(position: position, heard: heard))
                    if done(position) { return samples }
                }
                if log.all[mark...].contains(.endOfStream) { return samples }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("no end within \(timeout): \(samples.suffix(10))")
            return samples
        }

        /// Positions never go back, and at the tones they are within 100 ms of the file time of what is heard.
        func expectFileTime(_ samples: [Sample], sourceLocation: SourceLocation = #_sourceLocation) {
            for (before, after) in zip(samples, samples.dropFirst()) where after.position < before.position {
                Issue.record("the position went back from \(before) to \(after)", sourceLocation: sourceLocation)
            }
            let atTones = samples.filter { $0.heard != nil }
            #expect(atTones.count >= 5, "heard only \(atTones)", sourceLocation: sourceLocation)
            for sample in atTones {
                #expect(abs(sample.position.seconds - sample.heard!) <= 0.1, "position \(sample)", sourceLocation: sourceLocation)
            }
        }

        @Test("positions stay in the file's time, to the end, and after seeks")
        func positions() async throws {
            let (playbin, log) = try makePlaybin(book, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: 1))
            playbin.setState(.paused)
            try await log.waitFor("preroll") { $0 == .asyncDone }
            let duration = try #require(playbin.duration)
            let start = ContinuousClock.now
            playbin.setState(.playing)
            let played = try await sample(playbin, log)
            let elapsed = ContinuousClock.now - start
            expectFileTime(played)
            // 9.3 s of file, 3.96 s of it removed.
            #expect(elapsed > .milliseconds(5_200) && elapsed < .seconds(7.5), "played in \(elapsed)")
            #expect(isClose(played.last?.position, to: duration, within: .milliseconds(50)))
            #expect(isClose(playbin.position, to: duration, within: .milliseconds(50)))
            #expect(played.contains { $0.position > .milliseconds(1_600) && $0.position < .milliseconds(2_900) } == false,
                    "the dropped part of the 2 s pause is never reported: \(played)")

            // Into the middle of the 3 s pause: the target at once, then on to the last tone and the end.
            var mark = log.count
            playbin.setState(.paused)
            try await log.waitFor(after: mark, "paused") { $0 == .asyncDone || $0 == .stateChanged(old: .playing, new: .paused) }
            mark = log.count
            #expect(playbin.seek(to: .milliseconds(6_800)))
            try await log.waitFor(after: mark, "the seek's async-done") { $0 == .asyncDone }
            #expect(isClose(playbin.position, to: .milliseconds(6_800), within: .milliseconds(50)))
            mark = log.count
            playbin.setState(.playing)
            let afterSeek = try await sample(playbin, log, after: mark) { $0 > .milliseconds(8_700) }
            #expect(isClose(afterSeek.first?.position, to: .milliseconds(6_800), within: .milliseconds(100)))
            expectFileTime(afterSeek)

            // Back to 0.5 s while playing: the target at once, then the first tone from there.
            mark = log.count
            #expect(playbin.seek(to: .milliseconds(500)))
            try await log.waitFor(after: mark, "the seek's async-done") { $0 == .asyncDone }
            #expect(isClose(playbin.position, to: .milliseconds(500), within: .milliseconds(50)))
            let fromStart = try await sample(playbin, log, after: mark) { $0 > .milliseconds(4_700) }
            expectFileTime(fromStart)
            #expect(fromStart.first { $0.heard != nil }.map { $0.position < .milliseconds(1_000) } == true)
        }

        /// The running time of what `playbin` plays now (its clock against its base time), nil before it plays.
        static func runningTime(_ playbin: Playbin) -> Double? {
            let element = playbin.control.element
            guard let clock = gst_element_get_clock(element) else { return nil }
            defer { gst_object_unref(UnsafeMutableRawPointer(clock)) }
            let now = gst_clock_get_time(clock)
            let base = gst_element_get_base_time(element)
            return now >= base ? Double(now - base) / 1e9 : nil
        }

        @Test("with a sound server's 2 s buffer, positions follow what is heard, not what is buffered")
        func soundServerPositions() async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-silence-pulse")
            defer { folder.remove() }
            let xdg = folder.appending("xdg")
            try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let socket = xdg.path + "/native"
            let server = try Subprocess(
                "pulseaudio", ["--daemonize=no", "--exit-idle-time=-1", "-n", "--use-pid-file=no",
                               "-L", "module-native-protocol-unix auth-anonymous=1 socket=\(socket)",
                               "-L", "module-null-sink sink_name=speakers"],
                environment: Subprocess.environment(adding: ["XDG_RUNTIME_DIR": xdg.path, "HOME": folder.path]),
                stdout: .null, stderr: .null)
            defer { server.kill() }
            _ = try await poll({ FileManager.default.fileExists(atPath: socket) }, until: { $0 })
            // The pulsesink gets the playbin's 2 s buffer (Playbin.soundServerBuffer), so it takes each segment up to
            // 2 s before it is heard.
            let (playbin, log) = try makePlaybin(book, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: 1),
                                                 sink: "pulsesink server=unix:\(socket)")
            playbin.setState(.playing)
            try await log.waitFor("PLAYING") { $0 == .stateChanged(old: .paused, new: .playing) }
            // What is heard at running time r, by design: 0-1.5 s, then from 2.98 s, then from 8.28 s of the file.
            func fileTime(_ r: Double) -> Double { r < 1.5 ? r : r < 4.32 ? 2.98 + (r - 1.5) : 8.28 + (r - 4.32) }
            var checked = 0
            while !log.all.contains(.endOfStream) {
                if let before = Self.runningTime(playbin), let position = playbin.position, let after = Self.runningTime(playbin),
                   after < 5.3 {
                    let expected = fileTime((before + after) / 2)
                    #expect(abs(position.seconds - expected) <= 0.1, "at \(after) s of listening: \(position), not \(expected) s")
                    checked += 1
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(checked > 50)
        }

        @Test("turned off while playing, the rest plays whole, positions still in the file's time")
        func turnedOffWhilePlaying() async throws {
            let (playbin, log) = try makePlaybin(book, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: 1))
            playbin.setState(.playing)
            // In the second tone: the 2 s pause before it was shortened.
            let before = try await sample(playbin, log) { $0 > .milliseconds(3_300) }
            playbin.skipSilence = nil
            let removed = playbin.silenceRemoved
            #expect(isClose(removed, to: .milliseconds(1_480), within: .milliseconds(10)))
            let after = try await sample(playbin, log)
            expectFileTime(before + after)
            #expect(after.contains { $0.position > .milliseconds(6_500) && $0.position < .milliseconds(8_000) },
                    "the 3 s pause is played whole: \(after)")
            #expect(isClose(after.last?.position, to: .milliseconds(9_300), within: .milliseconds(50)))
            #expect(playbin.silenceRemoved == removed)
        }

        @Test("across the gapless handover the first file's end until the next is heard, then positions from 0 in its time",
              arguments: [1.0, 1.5])
        func handoverPositions(speed: Double) async throws {
            let (playbin, log) = try makePlaybin(book, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: 1))
            playbin.nextURI = nextBook.absoluteString
            if speed != 1 {
                playbin.setState(.paused)
                try await log.waitFor("preroll") { $0 == .asyncDone }
                let mark = log.count
                #expect(playbin.seek(to: .zero, rate: speed))
                try await log.waitFor(after: mark, "the rate seek's async-done") { $0 == .asyncDone }
            }
            let start = ContinuousClock.now
            playbin.setState(.playing)
            let taken = try await log.waitFor("about-to-finish") { if case .aboutToFinish = $0 { true } else { false } }
            let second = try await log.waitFor(after: taken.index, "the next stream's start") { if case .streamStart = $0 { true } else { false } }
            let sampled = try await sample(playbin, log, after: second.index)
            let elapsed = ContinuousClock.now - start
            // The sink takes the next stream's start as it renders the first file's last buffer: until the next file
            // is heard, the position is the first one's end.
            let played = Array(sampled.drop { $0.position > .seconds(9) })
            #expect(sampled.count - played.count <= 5, "the first file's end held: \(sampled.prefix(8))")
            #expect(played.first.map { $0.position < .milliseconds(300) } == true, "the next file starts at \(played.prefix(3))")
            // Right at the handover the sink may still hold the first file's last buffer.
            expectFileTime(Array(played.drop { $0.position < .milliseconds(100) }))
            #expect(isClose(played.last?.position, to: .milliseconds(9_300), within: .milliseconds(50)))
            // Twice 5.34 s at the speed: the time removed in the first file is not waited for at the handover.
            #expect(elapsed > .milliseconds(10_500) / speed && elapsed < .milliseconds(12_500) / speed, "played in \(elapsed)")
        }

        @Test("a file nearly all silence plays through at the shortest pause, not skipped whole")
        func nearlyAllSilencePlays() async throws {
            let (playbin, log) = try makePlaybin(nearlySilent, skipping: SilenceSkipping(threshold: .milliseconds(500), amount: 1))
            let start = ContinuousClock.now
            playbin.setState(.playing)
            let played = try await sample(playbin, log)
            let elapsed = ContinuousClock.now - start
            // 0.1 s, 0.52 s, 0.1 s.
            #expect(elapsed > .milliseconds(700) && elapsed < .seconds(3), "played in \(elapsed)")
            #expect(isClose(played.last?.position, to: .milliseconds(20_200), within: .milliseconds(50)))
            #expect(playbin.silenceRemoved > .seconds(19.4) && playbin.silenceRemoved < .seconds(19.5))
        }

        @Test("the settings read back, clamped")
        func settings() throws {
            let playbin = try Playbin(audioSink: "fakesink")
            #expect(playbin.skipSilence == nil)
            #expect(playbin.silenceRemoved == .zero)
            playbin.skipSilence = SilenceSkipping(threshold: .milliseconds(700), amount: 0.6)
            #expect(playbin.skipSilence == SilenceSkipping(threshold: .milliseconds(700), amount: 0.6))
            playbin.skipSilence = SilenceSkipping(threshold: .seconds(60), amount: 2)
            #expect(playbin.skipSilence == SilenceSkipping(threshold: .seconds(10), amount: 1))
            playbin.skipSilence = SilenceSkipping(threshold: .zero, amount: -1)
            #expect(playbin.skipSilence == SilenceSkipping(threshold: .milliseconds(100), amount: 0))
            playbin.skipSilence = nil
            #expect(playbin.skipSilence == nil)
        }
    }
}
