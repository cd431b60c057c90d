import CGStreamer

/// A GStreamer element state (GstState), named so it does not clash with the C type.
public enum PipelineState: Sendable, Equatable, CustomStringConvertible {
    case voidPending, null, ready, paused, playing

    init(_ state: GstState) {
        switch state {
        case GST_STATE_NULL: self = .null
        case GST_STATE_READY: self = .ready
        case GST_STATE_PAUSED: self = .paused
        case GST_STATE_PLAYING: self = .playing
        default: self = .voidPending
        }
    }

    var gstState: GstState {
        switch self {
        case .voidPending: GST_STATE_VOID_PENDING
        case .null: GST_STATE_NULL
        case .ready: GST_STATE_READY
        case .paused: GST_STATE_PAUSED
        case .playing: GST_STATE_PLAYING
        }
    }

    public var description: String {
        switch self {
        case .voidPending: "void-pending"
        case .null: "null"
        case .ready: "ready"
        case .paused: "paused"
        case .playing: "playing"
        }
    }
}

/// What `gst_element_set_state` answered (GstStateChangeReturn).
public enum StateChangeResult: Sendable, Equatable {
    /// The state was reached.
    case success
    /// The change continues in the background; `PlaybinEvent.asyncDone` follows when it completes.
    case async
    /// Reached, but a live source will not preroll in PAUSED.
    case noPreroll
    /// The change failed; an `PlaybinEvent.error` usually says why.
    case failure

    init(_ result: GstStateChangeReturn) {
        switch result {
        case GST_STATE_CHANGE_SUCCESS: self = .success
        case GST_STATE_CHANGE_ASYNC: self = .async
        case GST_STATE_CHANGE_NO_PREROLL: self = .noPreroll
        default: self = .failure
        }
    }
}
