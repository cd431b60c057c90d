import Foundation
import GStreamer
import LecternCore
import Testing
import TestSupport
@testable import LecternEngine

/// The engine's decisions alone, fed plain events: which calls the worker makes and what the player hears.
@Suite("Playbin state machine")
struct PlaybinStateMachineTests {
    struct Pipeline: PipelineQueries {
        var position: Duration?
        var duration: Duration?
        /// The group id of the stream heard; nil: cannot be told.
        var stream: UInt32?
        var heard: PlaybinControl.Heard { PlaybinControl.Heard(position: position, stream: stream) }
        var seekable = true
    }

    let a = URL(fileURLWithPath: "/books/a.ogg")
    let b = URL(fileURLWithPath: "/books/b.ogg")
    let pipeline = Pipeline(position: .seconds(1), duration: .seconds(60))
    typealias Machine = PlaybinStateMachine

    /// Loads `url` at `position` up to the preroll's async-done (the worker's NULL, then its NULL→READY).
    func prerolled(_ machine: inout Machine, _ url: URL, at position: Duration = .zero) -> Machine.Effects {
        let load = machine.load(url, at: position)
        guard case .load(_, let number)? = load.calls.first else {
            Issue.record("load made no load call: \(load)")
            return load
        }
        let started = machine.loadStarted(number)
        #expect(started)
        _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: pipeline)
        return machine.handle(.asyncDone, pipeline: pipeline)
    }

    @Test("a load at a position seeks there once prerolled, then is ready and plays if asked")
    func loadAtPosition() {
        var machine = Machine()
        let load = machine.load(a, at: .seconds(30))
        #expect(load.calls == [.load(a, number: 1)])
        #expect(machine.position(pipeline: pipeline) == .seconds(30), "the start position while loading")
        let early = machine.play()
        #expect(early == Machine.Effects(), "nothing plays before the seek to the start")
        let started = machine.loadStarted(1)
        #expect(started)
        _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: pipeline)
        let prerolled = machine.handle(.asyncDone, pipeline: pipeline)
        #expect(prerolled.calls == [.seek(.seconds(30), rate: 1, purpose: .start(load: 1))])
        #expect(prerolled.events == [])
        let landed = machine.seekDone(.start(load: 1), accepted: true, pipeline: pipeline)
        #expect(landed == Machine.Effects())
        let ready = machine.handle(.asyncDone, pipeline: pipeline)
        #expect(ready.events == [.ready(a, duration: .seconds(60))])
        #expect(ready.calls == [.setState(.playing)])
    }

    @Test("a start seek GStreamer refuses leaves the stream ready where it is")
    func refusedStartSeek() {
        var machine = Machine()
        _ = prerolled(&machine, a, at: .seconds(5))
        let refused = machine.seekDone(.start(load: 1), accepted: false, pipeline: pipeline)
        #expect(refused.events == [.ready(a, duration: .seconds(60))])
        #expect(machine.position(pipeline: pipeline) == .seconds(1), "where the pipeline is")
    }

    @Test("messages before the worker's NULL of the latest load are not that load's")
    func outdatedLoad() {
        var machine = Machine()
        _ = machine.load(a, at: .zero)
        _ = machine.load(b, at: .zero)
        let outdated = machine.loadStarted(1)
        #expect(!outdated, "the first load is outdated and goes no further")
        // The first file's own preroll, had it gone on: not taken for the second's.
        _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: pipeline)
        let stale = machine.handle(.asyncDone, pipeline: pipeline)
        #expect(stale == Machine.Effects())
        let started = machine.loadStarted(2)
        #expect(started)
        _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: pipeline)
        let ready = machine.handle(.asyncDone, pipeline: pipeline)
        #expect(ready.events == [.ready(b, duration: .seconds(60))])
    }

    @Test("a stop outdates a load still queued")
    func stopOutdatesLoad() {
        var machine = Machine()
        _ = machine.load(a, at: .zero)
        let stop = machine.stop()
        #expect(stop.calls == [.setState(.null)])
        let outdated = machine.loadStarted(1)
        #expect(!outdated)
        #expect(machine.position(pipeline: pipeline) == nil)
    }

    @Test("a seek reads as its target until it lands; a refused one reads where the pipeline is")
    func seekTarget() {
        var machine = Machine()
        _ = prerolled(&machine, a)
        let seek = machine.seek(to: .seconds(20))
        #expect(seek.calls == [.seek(.seconds(20), rate: 1, purpose: .move(1))])
        #expect(machine.position(pipeline: pipeline) == .seconds(20))
        // An async-done before the seek's mark on the bus is an earlier operation's.
        _ = machine.handle(.asyncDone, pipeline: pipeline)
        _ = machine.handle(.seekMarked(0), pipeline: pipeline)  // an earlier seek's mark
        _ = machine.handle(.asyncDone, pipeline: pipeline)
        #expect(machine.position(pipeline: pipeline) == .seconds(20))
        // After it, the seek's own, whether the worker has reported the seek made or not (the bus thread may
        // read the async-done first).
        _ = machine.handle(.seekMarked(1), pipeline: pipeline)
        _ = machine.handle(.asyncDone, pipeline: pipeline)
        #expect(machine.position(pipeline: pipeline) == .seconds(1))
        _ = machine.seekDone(.move(1), accepted: true, pipeline: pipeline)
        #expect(machine.position(pipeline: pipeline) == .seconds(1))

        _ = machine.seek(to: .seconds(40))
        _ = machine.seekDone(.move(2), accepted: false, pipeline: pipeline)
        #expect(machine.position(pipeline: pipeline) == .seconds(1))
    }

    @Test("a rate change seeks where the stream is; the next stream has the rate from the playbin, without a seek")
    func rate() {
        var machine = Machine()
        _ = prerolled(&machine, a)
        let rate = machine.setRate(1.5, pipeline: pipeline)
        #expect(rate.calls == [.seek(.seconds(1), rate: 1.5, purpose: .move(1))])
        _ = machine.setNext(b)
        _ = machine.handle(.streamStart(group: nil), pipeline: pipeline)  // the loaded stream's own
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: pipeline)
        let advanced = machine.handle(.streamStart(group: nil), pipeline: pipeline)
        #expect(advanced.events == [.advanced(b), .durationChanged(.seconds(60))])
        #expect(advanced.calls == [], "a seek would flush the end of a still to be heard")
    }

    @Test("after the next stream was taken, a seek or a rate change loads the current one again there, the next kept")
    func moveAfterTheHandover() {
        var machine = Machine()
        _ = prerolled(&machine, a)
        _ = machine.play()
        _ = machine.setNext(b)
        _ = machine.handle(.streamStart(group: nil), pipeline: pipeline)  // the loaded stream's own
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: pipeline)
        // Playbin would send the seek to b's decoder: a is loaded again at the place, and b goes back in the slot.
        let seek = machine.seek(to: .seconds(5))
        #expect(seek.calls == [.load(a, number: 2), .setNext(b)])
        #expect(machine.position(pipeline: pipeline) == .seconds(5))
        let reloaded = machine.loadStarted(2)
        #expect(reloaded)
        _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: pipeline)
        #expect(machine.handle(.asyncDone, pipeline: pipeline).calls == [.seek(.seconds(5), rate: 1, purpose: .start(load: 2))])
        let ready = machine.handle(.asyncDone, pipeline: pipeline)
        #expect(ready.calls == [.setState(.playing)], "playing, as it was")
        // a plays on to its end and b follows it without a gap, as before.
        _ = machine.handle(.streamStart(group: nil), pipeline: pipeline)
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: pipeline)
        // A rate change after the handover: a again, at the place, at the new rate.
        let rate = machine.setRate(1.5, pipeline: pipeline)
        #expect(rate.calls == [.load(a, number: 3), .setNext(b)])
        let reloadedAgain = machine.loadStarted(3)
        #expect(reloadedAgain)
        _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: pipeline)
        #expect(machine.handle(.asyncDone, pipeline: pipeline).calls == [.seek(.seconds(1), rate: 1.5, purpose: .start(load: 3))])
        _ = machine.handle(.asyncDone, pipeline: pipeline)
        _ = machine.handle(.streamStart(group: nil), pipeline: pipeline)
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: pipeline)
        let advanced = machine.handle(.streamStart(group: nil), pipeline: pipeline)
        #expect(advanced.events == [.advanced(b), .durationChanged(.seconds(60))])
        #expect(advanced.calls == [])
    }

    /// `a` playing, heard in stream 1, near its end; `b` taken by about-to-finish, and its start (stream 2) taken by the
    /// sink while a's last seconds are still ahead of what is heard. Returns those effects, and the pipeline.
    func nextStreamTaken(_ machine: inout Machine) -> (Machine.Effects, Pipeline) {
        _ = prerolled(&machine, a)
        _ = machine.play()
        _ = machine.setNext(b)
        let playing = Pipeline(position: .seconds(58), duration: .seconds(60), stream: 1)
        _ = machine.handle(.streamStart(group: 1), pipeline: playing)  // the loaded stream's own
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: playing)
        return (machine.handle(.streamStart(group: 2), pipeline: playing), playing)
    }

    @Test("the next stream's start taken ahead of what is heard is told once it is heard, moves meanwhile in the current one")
    func nextStreamToldWhenHeard() {
        var machine = Machine()
        let (taken, before) = nextStreamTaken(&machine)
        var playing = before
        #expect(taken == Machine.Effects())
        #expect(machine.awaitsNextStream)
        #expect(machine.handle(.durationChanged(.seconds(30)), pipeline: playing) == Machine.Effects(), "b's, not a's")
        #expect(machine.position(pipeline: playing) == .seconds(58))
        #expect(machine.heard(playing.heard, pipeline: playing) == Machine.Effects())
        // b heard: the player is told, once; before, a read of the position in it has none.
        playing = Pipeline(position: .milliseconds(10), duration: .seconds(30), stream: 2)
        #expect(machine.position(pipeline: playing) == nil)
        let heard = machine.heard(playing.heard, pipeline: playing)
        #expect(heard == Machine.Effects(events: [.advanced(b), .durationChanged(.seconds(30))]))
        #expect(!machine.awaitsNextStream)
        #expect(machine.position(pipeline: playing) == .milliseconds(10))
        #expect(machine.heard(playing.heard, pipeline: playing) == Machine.Effects())
        // b is the current stream: after the next one is taken, a move loads b again, not a.
        let c = URL(fileURLWithPath: "/books/c.ogg")
        _ = machine.setNext(c)
        _ = machine.handle(.aboutToFinish(nextURI: c.absoluteString), pipeline: playing)
        #expect(machine.seek(to: .seconds(5)).calls == [.load(b, number: 2), .setNext(c)])
    }

    @Test("at another speed too, the next stream's start taken ahead of what is heard is told once it is heard")
    func nextStreamToldWhenHeardAtSpeed() {
        var machine = Machine()
        _ = prerolled(&machine, a)
        _ = machine.setRate(1.5, pipeline: pipeline)
        _ = machine.handle(.seekMarked(1), pipeline: pipeline)
        _ = machine.handle(.asyncDone, pipeline: pipeline)
        _ = machine.play()
        _ = machine.setNext(b)
        let playing = Pipeline(position: .seconds(58), duration: .seconds(60), stream: 1)
        _ = machine.handle(.streamStart(group: 1), pipeline: playing)
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: playing)
        #expect(machine.handle(.streamStart(group: 2), pipeline: playing) == Machine.Effects(), "no seek, nothing told yet")
        #expect(machine.awaitsNextStream)
        #expect(machine.position(pipeline: playing) == .seconds(58))
        let heard = Pipeline(position: .milliseconds(10), duration: .seconds(30), stream: 2)
        #expect(machine.heard(heard.heard, pipeline: heard) == Machine.Effects(events: [.advanced(b), .durationChanged(.seconds(30))]))
        #expect(machine.position(pipeline: heard) == .milliseconds(10))
    }

    @Test("the next stream waiting to be heard: a move loads the current one again, the end tells it first")
    func nextStreamWaitingToBeHeard() {
        var machine = Machine()
        let (_, playing) = nextStreamTaken(&machine)
        #expect(machine.seek(to: .seconds(5)).calls == [.load(a, number: 2), .setNext(b)], "a, at the place; b back in the slot")
        #expect(!machine.awaitsNextStream)

        _ = machine.loadStarted(2)
        _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: playing)
        _ = machine.handle(.asyncDone, pipeline: playing)
        _ = machine.handle(.asyncDone, pipeline: playing)
        _ = machine.handle(.streamStart(group: 3), pipeline: playing)
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: playing)
        _ = machine.handle(.streamStart(group: 4), pipeline: Pipeline(position: .seconds(58), duration: .seconds(60), stream: 3))
        // The end of the last stream before b was heard: b was heard (shorter than the sink's buffer).
        let end = machine.handle(.endOfStream, pipeline: playing)
        #expect(end.events == [.advanced(b), .durationChanged(.seconds(60)), .endOfStream])
    }

    @Test("sinks that cannot tell what is heard (not synced) take the next stream as it starts")
    func nextStreamWithoutHeard() {
        var machine = Machine()
        _ = prerolled(&machine, a)
        _ = machine.setNext(b)
        _ = machine.handle(.streamStart(group: 1), pipeline: pipeline)
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: pipeline)
        let advanced = machine.handle(.streamStart(group: 2), pipeline: pipeline)
        #expect(advanced.events == [.advanced(b), .durationChanged(.seconds(60))])
        #expect(!machine.awaitsNextStream)
    }

    @Test("the next stream's failure is reported once, and the current stream is not stopped")
    func nextFails() {
        var machine = Machine()
        _ = prerolled(&machine, a)
        _ = machine.setNext(b)
        _ = machine.handle(.aboutToFinish(nextURI: b.absoluteString), pipeline: pipeline)
        let error = PlaybinEvent.error(message: "not audio", debug: nil, fromSink: false, streamURI: b.absoluteString)
        let first = machine.handle(error, pipeline: pipeline)
        #expect(first == Machine.Effects(events: [.nextFailed(b, "not audio")]))
        let again = machine.handle(error, pipeline: pipeline)
        #expect(again == Machine.Effects())
        let ownError = PlaybinEvent.error(message: "broken", debug: nil, fromSink: false, streamURI: a.absoluteString)
        let own = machine.handle(ownError, pipeline: pipeline)
        #expect(own == Machine.Effects(calls: [.setState(.null)], events: [.failed("broken")]))
        #expect(machine.position(pipeline: pipeline) == nil)
    }

    @Test("after a hang, a load goes on in the new pipeline once; a ready stream is reported lost")
    func replaced() {
        var machine = Machine()
        _ = machine.load(a, at: .seconds(3))
        _ = machine.play()
        let first = machine.pipelineReplaced(because: "going to NULL hung")
        #expect(first == Machine.Effects(calls: [.load(a, number: 2)]))
        #expect(machine.position(pipeline: pipeline) == .seconds(3))
        guard case .outputFailed? = machine.pipelineReplaced(because: "going to PAUSED hung").events.first else {
            Issue.record("a second hang in the same load is reported")
            return
        }
        #expect(machine.position(pipeline: pipeline) == nil)

        _ = prerolled(&machine, b)
        guard case .outputFailed? = machine.pipelineReplaced(because: "a seek hung").events.first else {
            Issue.record("a ready stream lost to a hang is reported")
            return
        }
        let idle = machine.pipelineReplaced(because: "going to NULL hung")
        #expect(idle == Machine.Effects(), "nothing was loaded")
    }

    @Test("the sound server's cork and uncork requests reach the player as they are, and change no state")
    func interruptions() {
        var machine = Machine()
        let before = machine.handle(.requestState(.paused), pipeline: pipeline)
        #expect(before == Machine.Effects(), "nothing loaded: a request of an old stream")
        _ = prerolled(&machine, a)
        _ = machine.play()
        let cork = machine.handle(.requestState(.paused), pipeline: pipeline)
        #expect(cork == Machine.Effects(events: [.interruptionBegan]), "no call: the player decides")
        let uncork = machine.handle(.requestState(.playing), pipeline: pipeline)
        #expect(uncork == Machine.Effects(events: [.interruptionEnded]))
        #expect(machine.phase == .ready)
        _ = machine.stop()
        let stale = machine.handle(.requestState(.playing), pipeline: pipeline)
        #expect(stale == Machine.Effects(), "stopped: the stream it concerned is gone")
    }
}
