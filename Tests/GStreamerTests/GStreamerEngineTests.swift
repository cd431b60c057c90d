import Foundation
import Testing
import LecternCore
@testable import LecternEngine

extension PlaybackTests {
    @Suite("GStreamerEngine")
    struct GStreamerEngineTests {
        let files: AudioFixtures

        init() async throws {
            files = try await AudioFixtures.shared()
        }

        func makeEngine(sink: String = "fakesink sync=true") throws -> (GStreamerEngine, EventLog<EngineEvent>) {
            let engine = try GStreamerEngine(audioSink: sink)
            return (engine, EventLog(draining: engine.events))
        }

        @Test("load at a position reports ready, then sits at that position")
        func loadAtPosition() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.url(.ogg10s), at: .seconds(4))
            let ready = try await log.waitFor("ready") { if case .ready = $0 { true } else { false } }
            guard case .ready(let url, let duration) = ready.event else { return }
            #expect(url == files.url(.ogg10s))
            expectClose(duration, .seconds(430.0 * 1024 / 44100), within: .milliseconds(50))
            expectClose(engine.position, .seconds(4), within: .milliseconds(50))
            #expect(log.all.filter { if case .ready = $0 { true } else { false } }.count == 1)

            let started = ContinuousClock.now
            engine.play()
            try await Task.sleep(for: .milliseconds(700))
            let playing = try #require(engine.position)
            // From 4 s on, in real time (the sink syncs to the clock): no further than the time since play() (the
            // sleep may have lasted longer on a busy machine).
            let elapsed = ContinuousClock.now - started
            #expect(playing > .seconds(4.2) && playing < .seconds(4) + elapsed + .milliseconds(100), "\(playing) after \(elapsed)")
        }

        @Test("play right after load starts at the load position, never from zero")
        func playBeforeReady() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.url(.ogg10s), at: .seconds(3))
            let started = ContinuousClock.now
            engine.play()
            #expect(engine.position == .seconds(3))
            try await log.waitFor("ready") { if case .ready = $0 { true } else { false } }
            try await Task.sleep(for: .milliseconds(500))
            let position = try #require(engine.position)
            // From 3 s on, in real time: no further than the time since play() (longer than 500 ms on a busy machine).
            let elapsed = ContinuousClock.now - started
            #expect(position > .seconds(3.1) && position < .seconds(3) + elapsed + .milliseconds(100), "\(position) after \(elapsed)")
        }

        @Test("a seek before ready is applied when ready")
        func seekBeforeReady() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.url(.ogg10s), at: .seconds(1))
            engine.seek(to: .seconds(6.5))
            try await log.waitFor("ready") { if case .ready = $0 { true } else { false } }
            expectClose(engine.position, .seconds(6.5), within: .milliseconds(50))
        }

        @Test("seek after ready is accurate")
        func seek() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.url(.ogg10s), at: .zero)
            try await log.waitFor("ready") { if case .ready = $0 { true } else { false } }
            engine.seek(to: .seconds(8.25))
            // A flushing seek completes in milliseconds; poll until the position settles there.
            let deadline = ContinuousClock.now + .seconds(5)
            while let position = engine.position, abs((position - .seconds(8.25)).seconds) > 0.05,
                  ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            expectClose(engine.position, .seconds(8.25), within: .milliseconds(50))
        }

        @Test("setNext continues into the next file: advanced, its duration, then end of stream")
        func gapless() async throws {
            let (engine, log) = try makeEngine()
            let first = files.url(.ogg2sA)
            let second = files.url(.wav1500ms)
            engine.load(first, at: .zero)
            engine.setNext(second)
            engine.play()
            try await log.waitFor(timeout: .seconds(15), "end of stream") { $0 == .endOfStream }
            let events = log.all
            guard case .ready(_, let duration) = events.first else {
                Issue.record("first event should be ready: \(events)")
                return
            }
            expectClose(duration, .seconds(2), within: .milliseconds(50))
            #expect(Array(events.dropFirst()) == [.advanced(second), .durationChanged(.seconds(1.5)), .endOfStream])
        }

        @Test("setRate(2) makes the position advance about twice as fast")
        func rate() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.url(.ogg10s), at: .seconds(1))
            try await log.waitFor("ready") { if case .ready = $0 { true } else { false } }
            engine.play()
            try await Task.sleep(for: .milliseconds(300))

            func speed() async throws -> Double {
                let start = ContinuousClock.now
                let from = try #require(engine.position)
                try await Task.sleep(for: .seconds(1.2))
                let to = try #require(engine.position)
                return (to - from).seconds / (ContinuousClock.now - start).seconds
            }
            let normal = try await speed()
            let before = try #require(engine.position)
            engine.setRate(2)
            expectClose(engine.position, before, within: .milliseconds(200))
            // The new rate takes effect with a seek the engine's thread makes: measure once the position moves again.
            let deadline = ContinuousClock.now + .seconds(5)
            while (engine.position ?? .zero) < before + .milliseconds(300), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let fast = try await speed()
            #expect(normal > 0.7 && normal < 1.3, "rate 1 advanced \(normal)× wall time")
            #expect(fast > 1.5 && fast < 2.5, "rate 2 advanced \(fast)× wall time")
            #expect(!log.all.contains { if case .failed = $0 { true } else { false } })
        }

        @Test("two files rendered gaplessly into a WAV have exactly the samples of both")
        func gaplessRender() async throws {
            let output = files.scratchURL("render.wav")
            defer { try? FileManager.default.removeItem(at: output) }
            let first = files.url(.wav2s)
            let second = files.url(.wav1500ms)
            do {
                let (engine, log) = try makeEngine(
                    sink: "audioconvert ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc ! filesink location=\(output.path)"
                )
                engine.load(first, at: .zero)
                engine.setNext(second)
                engine.play()
                try await log.waitFor(timeout: .seconds(20), "end of stream") { $0 == .endOfStream }
                #expect(log.all.contains(.advanced(second)))
                engine.stop()  // NULL: wavenc has written its header, filesink closes the file
            }
            let expected = try AudioFixtures.wavFrameCount(first) + AudioFixtures.wavFrameCount(second)
            let rendered = try AudioFixtures.wavFrameCount(output)
            #expect(expected == 88_200 + 66_150)
            #expect(abs(rendered - expected) <= 1024, "rendered \(rendered) frames, sources have \(expected)")
        }

        @Test("a missing file fails, and nothing is loaded")
        func failure() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.directory.appendingPathComponent("gone.ogg"), at: .zero)
            let failed = try await log.waitFor("failed") { if case .failed = $0 { true } else { false } }
            guard case .failed(let message) = failed.event else { return }
            #expect(!message.isEmpty)
            #expect(engine.position == nil)
            #expect(!log.all.contains { if case .ready = $0 { true } else { false } })

            // The engine recovers with the next load.
            engine.load(files.url(.wav2s), at: .seconds(1))
            try await log.waitFor(after: failed.index, "ready") { if case .ready = $0 { true } else { false } }
            expectClose(engine.position, .seconds(1), within: .milliseconds(50))
        }

        @Test("a next file that can't be played is reported as the next file's failure, not the current one's")
        func nextFails() async throws {
            let (engine, log) = try makeEngine()
            let garbage = files.directory.appendingPathComponent("garbage-next.ogg")
            var random = SystemRandomNumberGenerator()
            try Data((0..<40_000).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: garbage)
            defer { try? FileManager.default.removeItem(at: garbage) }
            engine.load(files.url(.wav1500ms), at: .zero)
            engine.setNext(garbage)
            engine.play()
            let failure = try await log.waitFor(timeout: .seconds(10), "a failure") {
                switch $0 { case .failed, .nextFailed: true; default: false }
            }
            guard case .nextFailed(let url, let message) = failure.event else {
                Issue.record("expected nextFailed(garbage-next.ogg), got \(failure.event); events \(log.all)")
                return
            }
            #expect(url == garbage)
            #expect(!message.isEmpty)
            // The current stream plays on: the engine was not stopped (see EngineEvent.nextFailed).
            let before = try #require(engine.position)
            try await Task.sleep(for: .milliseconds(300))
            let after = try #require(engine.position)
            #expect(after > before, "position \(before) then \(after)")
            #expect(!log.all.contains { if case .failed = $0 { true } else { false } }, "\(log.all)")
        }

        @Test("a pipeline that hangs in a state change is given up, and the file loading plays in a new one")
        func hungPipelineIsReplaced() async throws {
            // Every buffer waits 1.5 s in `identity` on the streaming thread, which holds its pad's stream lock
            // meanwhile: going to NULL waits for it, as it would for a deadlocked GStreamer, but for 1.5 s only.
            let engine = try GStreamerEngine(audioSink: "identity sleep-time=1500000 ! fakesink sync=false",
                                             hangLimit: .milliseconds(300))
            let log = EventLog(draining: engine.events)
            engine.load(files.url(.ogg10s), at: .zero)
            let first = try await log.waitFor(timeout: .seconds(10), "ready") { if case .ready = $0 { true } else { false } }
            engine.play()
            try await Task.sleep(for: .milliseconds(300))  // the streaming thread is in the next buffer's wait
            #expect(engine.abandonedPipelines == 0)

            engine.load(files.url(.wav2s), at: .zero)  // returns at once; the worker's NULL waits for the stream
            let second = try await log.waitFor(after: first.index + 1, timeout: .seconds(10), "ready") {
                if case .ready = $0 { true } else { false }
            }
            #expect(engine.abandonedPipelines == 1, "going to NULL waited for the streaming thread")
            guard case .ready(let url, let duration) = second.event else { return }
            #expect(url == files.url(.wav2s))
            expectClose(duration, .seconds(2), within: .milliseconds(50))
            // The given-up playbin's own events (its NULL completes once the wait ends) reach no one.
            try await Task.sleep(for: .seconds(1.5))
            #expect(Array(log.all.dropFirst(second.index + 1)) == [], "\(log.all)")
            // Nothing was reported as failed: the load simply went on in the new pipeline.
            #expect(!log.all.contains { switch $0 { case .failed, .outputFailed: true; default: false } }, "\(log.all)")
        }

        @Test("stop releases the stream; seek and position then do nothing")
        func stop() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.url(.ogg10s), at: .zero)
            try await log.waitFor("ready") { if case .ready = $0 { true } else { false } }
            engine.play()
            engine.stop()
            #expect(engine.position == nil)
            engine.seek(to: .seconds(2))
            #expect(engine.position == nil)
        }

        @Test("loading another file replaces the current one")
        func reload() async throws {
            let (engine, log) = try makeEngine()
            engine.load(files.url(.ogg10s), at: .seconds(2))
            engine.play()
            try await log.waitFor("ready") { if case .ready = $0 { true } else { false } }
            let mark = log.count
            engine.load(files.url(.flac3s), at: .seconds(0.5))
            let ready = try await log.waitFor(after: mark, "second ready") { if case .ready = $0 { true } else { false } }
            #expect(ready.event == .ready(files.url(.flac3s), duration: .seconds(3)))
            expectClose(engine.position, .seconds(0.5), within: .milliseconds(50))
        }
    }
}
