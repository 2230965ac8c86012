"""Non-maximum suppression of detected boxes."""
from __future__ import annotations

import numpy as np

from ..registry import kernel


def _iou(box, others) -> np.ndarray:
    """IoU of one (x_center, y_center, width, height) box with each of `others`."""
    def corners(b):
        return b[..., 0] - b[..., 2] / 2, b[..., 1] - b[..., 3] / 2, b[..., 0] + b[..., 2] / 2, b[..., 1] + b[..., 3] / 2
    ax0, ay0, ax1, ay1 = corners(box)
    bx0, by0, bx1, by1 = corners(others)
    inter = np.clip(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), 0, None) * \
        np.clip(np.minimum(ay1, by1) - np.maximum(ay0, by0), 0, None)
    union = box[2] * box[3] + others[:, 2] * others[:, 3] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def _select(boxes, scores, iou_threshold, score_threshold, max_boxes, per_class) -> list[int]:
    """The boxes kept, best first: each box's score is its best class's; a box goes when its IoU
    with a kept one (of its class, with per_class) is over the threshold."""
    best, cls = scores.max(axis=1), scores.argmax(axis=1)
    order = [int(i) for i in np.argsort(-best, kind="stable") if best[i] >= score_threshold]
    kept: list[int] = []
    for i in order:
        if len(kept) == max_boxes:
            break
        rivals = [k for k in kept if not per_class or cls[k] == cls[i]]
        if not rivals or not (_iou(boxes[i], boxes[rivals]) > iou_threshold).any():
            kept.append(i)
    return kept


@kernel("non_maximum_suppression")
def non_maximum_suppression(a):
    """iOS15's form (boxes [n, B, 4], scores [n, B, K], a score threshold, four outputs: the
    kept boxes, their scores, indices and count) and iOS17's (boxes [n, 4, B], scores
    [n, K, B], no threshold, no count). Kept boxes come best first, padded with zeros, their
    indices with -1."""
    boxes, scores = np.asarray(a("boxes")), np.asarray(a("scores"))
    late = len(a.op.outputs) == 3          # iOS17: the boxes along the last axis
    if late:
        boxes, scores = boxes.transpose(0, 2, 1), scores.transpose(0, 2, 1)
    iou = float(a.scalar("iou_threshold"))
    floor = -np.inf if late else float(a.scalar("score_threshold"))
    max_boxes, per_class = int(a.scalar("max_boxes")), bool(a.scalar("per_class_suppression", False))
    n, _, k = scores.shape
    a.allow((n, max_boxes, 4 + k + 1), 8)
    out_boxes = np.zeros((n, max_boxes, 4), boxes.dtype)
    out_scores = np.zeros((n, max_boxes, k), scores.dtype)
    indices = np.full((n, max_boxes), -1, np.int32)
    counts = np.zeros(n, np.int32)
    for b in range(n):
        kept = _select(boxes[b].astype(np.float64), scores[b].astype(np.float64), iou, floor, max_boxes, per_class)
        out_boxes[b, :len(kept)], out_scores[b, :len(kept)] = boxes[b, kept], scores[b, kept]
        indices[b, :len(kept)], counts[b] = kept, len(kept)
    if late:
        return out_boxes.transpose(0, 2, 1), out_scores.transpose(0, 2, 1), indices
    return out_boxes, out_scores, indices, counts
