// The node table of `tree.nodes`, built in one pass over tree-sitter's own
// subtrees.
//
// A tree cursor pays, for every visible node, a call per move, a rebuilt
// child iterator, a TSNode and a walk up the cursor's stack for the field:
// about a fifth of the parse on the bundled grammars. This walk visits the
// same nodes in the same order with the same answers (kind with aliases
// applied, field as `ts_tree_cursor_current_field_id` reports it, byte range
// and lines) from one frame per level, so it costs a few loads per node.
//
// It reads tree-sitter's internal headers, which is why it is compiled
// against the sources of the exact tree-sitter crate the host links (see
// build.rs). The unit tests compare its table with a cursor walk on every
// bundled grammar, so a tree-sitter update that changes these internals
// fails them instead of changing what plugins see.

#include <stdint.h>
#include <stdlib.h>

#include "tree_sitter/api.h"
#include "./language.h"
#include "./length.h"
#include "./subtree.h"
#include "./tree.h"

// One row of the table; the Rust side declares the same layout.
typedef struct {
  uint32_t kind;
  uint32_t field;
  uint32_t parent;
  uint32_t end;
  uint32_t start_byte;
  uint32_t end_byte;
  uint32_t start_line;
  uint32_t end_line;
} CiTableNode;

// What the walk needs from the caller and gives back.
typedef struct {
  // kept[public symbol]: whether nodes of that kind go into the table.
  const bool *kept;
  uint32_t kept_len;
  // kind_index[public symbol]: index into the table's kinds, UINT32_MAX until
  // first seen; kinds_seen lists the public symbols in that order.
  uint32_t *kind_index;
  uint16_t *kinds_seen;
  uint32_t kinds_seen_len;
  // The same for field ids (index 0 is reserved for "no field").
  uint32_t *field_index;
  uint16_t *fields_seen;
  uint32_t fields_seen_len;
  uint32_t field_index_len;
  // Where the rows go, and how many fit.
  CiTableNode *nodes;
  uint32_t capacity;
  uint32_t count;
  // Called every few thousand subtrees; true stops the walk.
  bool (*expired)(void *context);
  void *context;
} CiWalk;

enum {
  CI_WALK_DONE = 0,
  CI_WALK_FULL = 1,
  CI_WALK_EXPIRED = 2,
  CI_WALK_NO_MEMORY = 3,
};

#define CI_NO_PARENT UINT32_MAX

// Iterating the children of one subtree.
typedef struct {
  Subtree parent;
  const TSSymbol *alias_sequence;
  const TSFieldMapEntry *fields;
  const TSFieldMapEntry *fields_end;
  // Start of the next child (its padding skipped).
  Length position;
  uint32_t child_index;
  uint32_t structural_child_index;
  // The field children inherit from this subtree and its invisible
  // ancestors up to the nearest visible one (0 below a visible node).
  uint32_t inherited_field;
  // The table row of this subtree (visible and kept), else CI_NO_PARENT;
  // its `end` is written when the frame is left.
  uint32_t row;
  // The table parent of the children.
  uint32_t table_parent;
} CiFrame;

static inline uint32_t ci_end_line(Length start, Length end) {
  // The end line is the line of the last byte: a node ending right after a
  // newline ends on the line before.
  if (end.bytes > start.bytes && end.extent.column == 0 && end.extent.row > start.extent.row) {
    return end.extent.row;
  }
  return end.extent.row + 1;
}

static inline uint32_t ci_kind(CiWalk *walk, TSSymbol symbol) {
  uint32_t index = walk->kind_index[symbol];
  if (index == UINT32_MAX) {
    index = walk->kinds_seen_len++;
    walk->kind_index[symbol] = index;
    walk->kinds_seen[index] = symbol;
  }
  return index;
}

static inline uint32_t ci_field(CiWalk *walk, TSFieldId field) {
  if (field == 0 || field >= walk->field_index_len) return 0;
  uint32_t index = walk->field_index[field];
  if (index == 0) {
    index = walk->fields_seen_len++;
    walk->field_index[field] = index;
    walk->fields_seen[index] = field;
  }
  return index;
}

static inline void ci_frame_init(
  CiFrame *frame,
  const TSLanguage *language,
  Subtree subtree,
  Length position,
  uint32_t inherited_field,
  uint32_t row,
  uint32_t table_parent
) {
  uint16_t production = subtree.ptr->production_id;
  frame->parent = subtree;
  frame->alias_sequence = ts_language_alias_sequence(language, production);
  ts_language_field_map(language, production, &frame->fields, &frame->fields_end);
  frame->position = position;
  frame->child_index = 0;
  frame->structural_child_index = 0;
  frame->inherited_field = inherited_field;
  frame->row = row;
  frame->table_parent = table_parent;
}

static int ci_push(CiWalk *walk, Length start, Length end, TSSymbol symbol, uint32_t field, uint32_t parent) {
  if (walk->count == walk->capacity) return CI_WALK_FULL;
  CiTableNode *node = &walk->nodes[walk->count++];
  node->kind = ci_kind(walk, symbol);
  node->field = ci_field(walk, field);
  node->parent = parent;
  node->end = walk->count;
  node->start_byte = start.bytes;
  node->end_byte = end.bytes;
  node->start_line = start.extent.row + 1;
  node->end_line = ci_end_line(start, end);
  return CI_WALK_DONE;
}

// Makes room for one more frame above `depth`; moves the frames.
static bool ci_reserve(CiFrame **frames, uint32_t *capacity, uint32_t depth) {
  if (depth < *capacity) return true;
  CiFrame *grown = realloc(*frames, (size_t)*capacity * 2 * sizeof(CiFrame));
  if (!grown) return false;
  *frames = grown;
  *capacity *= 2;
  return true;
}

// Walks the tree under `root` (a node as `ts_tree_root_node` returns it).
int code_intel_named_nodes(TSNode root, CiWalk *walk) {
  const TSLanguage *language = root.tree->language;
  const Subtree *root_subtree = (const Subtree *)root.id;
  Length root_start = {root.context[0], {root.context[1], root.context[2]}};
  Length root_end = length_add(root_start, ts_subtree_size(*root_subtree));

  uint32_t root_row = CI_NO_PARENT;
  TSSymbol root_symbol = root.context[3] ? root.context[3] : ts_subtree_symbol(*root_subtree);
  root_symbol = ts_language_public_symbol(language, root_symbol);
  if (root_symbol < walk->kept_len && walk->kept[root_symbol]) {
    root_row = walk->count;
    int status = ci_push(walk, root_start, root_end, root_symbol, 0, CI_NO_PARENT);
    if (status) return status;
  }
  if (ts_subtree_child_count(*root_subtree) == 0) return CI_WALK_DONE;

  uint32_t depth_capacity = 64;
  CiFrame *frames = malloc(depth_capacity * sizeof(CiFrame));
  if (!frames) return CI_WALK_NO_MEMORY;
  uint32_t depth = 1;
  ci_frame_init(&frames[0], language, *root_subtree, root_start, 0, root_row, root_row);

  int status = CI_WALK_DONE;
  uint32_t visited = 0;
  while (depth > 0) {
    CiFrame *frame = &frames[depth - 1];
    if (frame->child_index == frame->parent.ptr->child_count) {
      if (frame->row != CI_NO_PARENT) walk->nodes[frame->row].end = walk->count;
      depth--;
      continue;
    }
    if ((++visited & 4095) == 0 && walk->expired(walk->context)) {
      status = CI_WALK_EXPIRED;
      break;
    }

    const Subtree *children = ts_subtree_children(frame->parent);
    Subtree child = children[frame->child_index];
    Length start = frame->position;
    Length end = length_add(start, ts_subtree_size(child));
    frame->child_index++;
    frame->position = end;
    if (frame->child_index < frame->parent.ptr->child_count) {
      frame->position = length_add(end, ts_subtree_padding(children[frame->child_index]));
    }

    // Visibility, alias and field exactly as the tree cursor decides them.
    bool extra = ts_subtree_extra(child);
    TSSymbol alias = 0;
    uint32_t field = 0;
    if (!extra) {
      if (frame->alias_sequence) alias = frame->alias_sequence[frame->structural_child_index];
      for (const TSFieldMapEntry *entry = frame->fields; entry < frame->fields_end; entry++) {
        if (!entry->inherited && entry->child_index == frame->structural_child_index) {
          field = entry->field_id;
          break;
        }
      }
      if (field == 0) field = frame->inherited_field;
      frame->structural_child_index++;
    }
    bool visible = ts_subtree_visible(child) || alias != 0;

    if (visible) {
      TSSymbol symbol = ts_language_public_symbol(language, alias ? alias : ts_subtree_symbol(child));
      uint32_t row = CI_NO_PARENT;
      uint32_t table_parent = frame->table_parent;
      if (symbol < walk->kept_len && walk->kept[symbol]) {
        row = walk->count;
        status = ci_push(walk, start, end, symbol, field, table_parent);
        if (status) break;
      }
      if (ts_subtree_child_count(child) == 0) continue;
      if (row != CI_NO_PARENT) table_parent = row;
      if (!ci_reserve(&frames, &depth_capacity, depth)) {
        status = CI_WALK_NO_MEMORY;
        break;
      }
      ci_frame_init(&frames[depth++], language, child, start, 0, row, table_parent);
    } else if (ts_subtree_visible_child_count(child) > 0) {
      // An invisible node's children belong to the nearest visible ancestor,
      // and fill the field the invisible node fills unless they name their
      // own (an extra node passes none on).
      uint32_t table_parent = frame->table_parent;
      if (!ci_reserve(&frames, &depth_capacity, depth)) {
        status = CI_WALK_NO_MEMORY;
        break;
      }
      ci_frame_init(&frames[depth++], language, child, start, field, CI_NO_PARENT, table_parent);
    }
  }
  free(frames);
  return status;
}
