import Foundation
import GStreamer
import Testing
import TestSupport

/// Everything that plays in real time, one test at a time (timing on two shared cores).
@Suite("Playback", .serialized)
struct PlaybackTests {}

extension PlaybackTests {
    @Suite("Playbin")
    struct PlaybinTests {
        let files: AudioFixtures

        init() async throws {
            files = try await AudioFixtures.shared()
        }

        /// A playbin on a clock-synced fake sink whose events are recorded by the bus-thread handler.
        func makePlaybin(_ file: AudioFixtures.File) throws -> (Playbin, EventLog<PlaybinEvent>) {
            let log = EventLog<PlaybinEvent>()
            let playbin = try Playbin(audioSink: "fakesink sync=true") { event, _ in log.append(event) }
            playbin.uri = files.url(file).absoluteString
            return (playbin, log)
        }

        /// How many times the wall clock's pace the position advances, over a second of playing.
        func pace(of playbin: Playbin) async throws -> Double {
            let start = ContinuousClock.now
            let from = try #require(playbin.position)
            try await Task.sleep(for: .seconds(1))
            let to = try #require(playbin.position)
            return (to - from).seconds / (ContinuousClock.now - start).seconds
        }

        @Test("prerolls, plays, and the position advances")
        func plays() async throws {
            let (playbin, log) = try makePlaybin(.ogg10s)
            #expect(playbin.setState(.paused) == .async)
            try await log.waitFor("async-done") { $0 == .asyncDone }
            #expect(isClose(playbin.duration, to: .seconds(430.0 * 1024 / 44100), within: .milliseconds(50)))
            #expect(isClose(playbin.position, to: .zero, within: .milliseconds(50)))
            #expect(playbin.state == .paused)

            playbin.setState(.playing)
            try await log.waitFor("PLAYING") { $0 == .stateChanged(old: .paused, new: .playing) }
            try await Task.sleep(for: .milliseconds(800))
            let first = try #require(playbin.position)
            try await Task.sleep(for: .milliseconds(500))
            let second = try #require(playbin.position)
            #expect(first > .milliseconds(300))
            #expect(second > first + .milliseconds(200))
            // Only the playbin's own state changes are reported, never its children's.
            #expect(log.all.contains(.stateChanged(old: .null, new: .ready)))
            #expect(log.all.filter { if case .stateChanged = $0 { true } else { false } }.count <= 6)
        }

        @Test("an accurate seek lands within 50 ms of its target", arguments: [3.3, 7.77, 0.5])
        func accurateSeek(seconds: Double) async throws {
            let (playbin, log) = try makePlaybin(.ogg10s)
            playbin.setState(.paused)
            try await log.waitFor("preroll") { $0 == .asyncDone }
            let mark = log.count
            #expect(playbin.seek(to: .seconds(seconds)))
            try await log.waitFor(after: mark, "seek's async-done") { $0 == .asyncDone }
            #expect(isClose(playbin.position, to: .seconds(seconds), within: .milliseconds(50)))
        }

        @Test("the events stream delivers the end of the stream")
        func eventsStream() async throws {
            let playbin = try Playbin(audioSink: "fakesink sync=false")
            playbin.uri = files.url(.wav1500ms).absoluteString
            playbin.setState(.playing)
            var seen: [PlaybinEvent] = []
            for await event in playbin.events {
                seen.append(event)
                if event == .endOfStream || seen.count > 50 { break }
            }
            #expect(seen.contains { if case .streamStart(group: _?) = $0 { true } else { false } })
            #expect(seen.contains(.asyncDone))
            #expect(seen.last == .endOfStream)
            #expect(seen.contains(.aboutToFinish(nextURI: nil)))
        }

        @Test("the gapless slot continues into the next URI and reports it")
        func gaplessSlot() async throws {
            let (playbin, log) = try makePlaybin(.wav1500ms)
            let next = files.url(.ogg2sA).absoluteString
            playbin.nextURI = next
            #expect(playbin.nextURI == next)
            playbin.setState(.playing)
            let taken = try await log.waitFor("about-to-finish") { if case .aboutToFinish = $0 { true } else { false } }
            #expect(taken.event == .aboutToFinish(nextURI: next))
            #expect(playbin.nextURI == nil, "taking empties the slot")
            let second = try await log.waitFor(after: taken.index, "second stream-start") { if case .streamStart = $0 { true } else { false } }
            #expect(isClose(playbin.duration, to: .seconds(2), within: .milliseconds(50)))
            try await log.waitFor(after: second.index, timeout: .seconds(10), "end") { $0 == .endOfStream }
            // Played back to back: 1.5 s + 2 s of audio took about 3.5 s, not a restart from zero.
            let groups = log.all.compactMap { if case .streamStart(let group) = $0 { group } else { nil } }
            #expect(groups.count == 2 && Set(groups).count == 2, "a group id for each file: \(groups)")
        }

        @Test("a rate seek plays faster and keeps the position")
        func rate() async throws {
            let (playbin, log) = try makePlaybin(.ogg10s)
            playbin.setState(.paused)
            try await log.waitFor("preroll") { $0 == .asyncDone }
            // Marked before the seek: its async-done can reach the log (from the bus thread) before seek() returns.
            let mark = log.count
            #expect(playbin.seek(to: .seconds(2), rate: 2))
            #expect(playbin.rate == 2)
            try await log.waitFor(after: mark, "seek's async-done") { $0 == .asyncDone }
            #expect(isClose(playbin.position, to: .seconds(2), within: .milliseconds(50)))
            playbin.setState(.playing)
            try await log.waitFor("PLAYING") { $0 == .stateChanged(old: .paused, new: .playing) }
            let ratio = try await pace(of: playbin)
            #expect(ratio > 1.5 && ratio < 2.5, "media advanced \(ratio)× wall time")
        }

        @Test("the next stream of the gapless slot plays at the speed of the last rate seek from its start")
        func rateAcrossTheHandover() async throws {
            let (playbin, log) = try makePlaybin(.wav1500ms)
            playbin.nextURI = files.url(.ogg10s).absoluteString
            playbin.setState(.paused)
            try await log.waitFor("preroll") { $0 == .asyncDone }
            let mark = log.count
            #expect(playbin.seek(to: .zero, rate: 2))
            try await log.waitFor(after: mark, "seek's async-done") { $0 == .asyncDone }
            playbin.setState(.playing)
            let taken = try await log.waitFor("about-to-finish") { if case .aboutToFinish = $0 { true } else { false } }
            try await log.waitFor(after: taken.index, "second stream-start") { if case .streamStart = $0 { true } else { false } }
            #expect(playbin.rate == 2)
            // In the second stream (its duration is the 10 s file's), the position advances at twice the wall time.
            let duration = try await poll(timeout: .seconds(5), every: .milliseconds(20), { playbin.duration }) { ($0 ?? .zero) > .seconds(5) }
            #expect((duration ?? .zero) > .seconds(5), "the second stream's duration: \(String(describing: duration))")
            try await Task.sleep(for: .milliseconds(200))
            let ratio = try await pace(of: playbin)
            #expect(ratio > 1.5 && ratio < 2.5, "the next stream advanced \(ratio)× wall time")

            // A stream loaded afresh starts at rate 1.
            playbin.setState(.null)
            #expect(playbin.rate == 1)
            playbin.uri = files.url(.ogg10s).absoluteString
            let loaded = log.count
            playbin.setState(.playing)
            try await log.waitFor(after: loaded, "PLAYING") { $0 == .stateChanged(old: .paused, new: .playing) }
            let loadedRatio = try await pace(of: playbin)
            #expect(loadedRatio > 0.7 && loadedRatio < 1.3, "a loaded stream advanced \(loadedRatio)× wall time")
        }

        @Test("a missing file is an error event")
        func missingFile() async throws {
            let log = EventLog<PlaybinEvent>()
            let playbin = try Playbin(audioSink: "fakesink") { event, _ in log.append(event) }
            let uri = files.directory.appendingPathComponent("missing.ogg").absoluteString
            playbin.uri = uri
            playbin.setState(.paused)
            let error = try await log.waitFor("error") { if case .error = $0 { true } else { false } }
            guard case .error(let message, _, let fromSink, let streamURI) = error.event else { return }
            #expect(!fromSink, "a missing file is the stream's failure, not the output's")
            #expect(!message.isEmpty)
            #expect(streamURI == uri, "the error names the stream that failed")
        }

        @Test("an error at the gapless handover names the stream that failed: the next one")
        func nextStreamError() async throws {
            let garbage = files.directory.appendingPathComponent("garbage-slot.ogg")
            try Data(repeating: 0x5A, count: 30_000).write(to: garbage)
            defer { try? FileManager.default.removeItem(at: garbage) }
            let (playbin, log) = try makePlaybin(.wav1500ms)
            playbin.nextURI = garbage.absoluteString
            playbin.setState(.playing)
            let error = try await log.waitFor(timeout: .seconds(10), "error") { if case .error = $0 { true } else { false } }
            guard case .error(_, _, let fromSink, let streamURI) = error.event else { return }
            #expect(!fromSink)
            #expect(streamURI == garbage.absoluteString, "the error names \(streamURI ?? "no stream")")
        }

        @Test("volume is linear and clamped")
        func volume() throws {
            let playbin = try Playbin(audioSink: "fakesink")
            #expect(playbin.volume == 1)
            playbin.volume = 0.25
            #expect(playbin.volume == 0.25)
            playbin.volume = -1
            #expect(playbin.volume == 0)
        }

        @Test("a bad sink description throws")
        func badSink() {
            #expect(throws: PipelineError.self) {
                _ = try Playbin(audioSink: "nosuchelement ! fakesink")
            }
        }

        @Test("released while playing and while NULL without hanging")
        func release() async throws {
            for state in [PipelineState.playing, .null, .paused] {
                let (playbin, log) = try makePlaybin(.ogg10s)
                playbin.setState(state)
                if state != .null {
                    try await log.waitFor("async-done") { $0 == .asyncDone }
                }
                let events = playbin.events
                _ = consume playbin
                // The bus thread finished the stream on its way out.
                for await _ in events {}
            }
        }
    }
}
