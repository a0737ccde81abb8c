package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"prism/core"
	"prism/core/logkey"
	"prism/sources/dsh"
)

// ImportReader is how an engine's import reads a file: in one of its
// import slots, with its decoder limits and foreign formats, handing the
// decode's memory back when done.
type ImportReader struct {
	// Slots bound the imports decoding at once.
	Slots ImportSlots
	// Limits and Foreign are the decoder's (dsh.ReadFileWith).
	Limits  dsh.Limits
	Foreign []dsh.Foreign
	// Release runs when an import ends, whether it succeeded or was
	// refused: it hands the decode's peak back to the OS as the process's
	// policy allows (memrelease.Release).
	Release func()
}

// ReadFile checks o, takes a slot (failing at once with a *BusyError when
// none is free), decodes the file at path and passes its logs to run, the
// engine's import of them, before giving the slot back.
func (r ImportReader) ReadFile(ctx context.Context, path string, o ImportOptions, run func([]*dsh.Log) ([]ImportResult, error)) ([]ImportResult, error) {
	return r.read(ctx, o, func() ([]*dsh.Log, error) {
		logs, _, err := dsh.ReadFileWith(path, r.Limits, r.Foreign)
		return logs, err
	}, run)
}

// Read is ReadFile for a file held by a reader (an upload) of size bytes;
// name stands for it in errors.
func (r ImportReader) Read(ctx context.Context, name string, rd io.Reader, size int64, o ImportOptions, run func([]*dsh.Log) ([]ImportResult, error)) ([]ImportResult, error) {
	return r.read(ctx, o, func() ([]*dsh.Log, error) {
		logs, _, err := dsh.DecodeNamed(name, rd, size, r.Limits, r.Foreign)
		var fe *dsh.FormatError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = name
		}
		return logs, err
	}, run)
}

func (r ImportReader) read(ctx context.Context, o ImportOptions, decode func() ([]*dsh.Log, error), run func([]*dsh.Log) ([]ImportResult, error)) ([]ImportResult, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	release, err := r.Slots.Acquire(ctx, false)
	if err != nil {
		return nil, err
	}
	defer release()
	if r.Release != nil {
		defer r.Release()
	}
	logs, err := decode()
	if err != nil {
		return nil, err
	}
	return run(logs)
}

// ImportTx is one engine's import transaction as ImportPlan.Run drives
// it; each method is the engine's SQL for one step.
type ImportTx interface {
	// Exists reports whether session id is stored.
	Exists(id string) (bool, error)
	// Before returns how many events session id held before the import
	// (0 for a session not stored).
	Before(id string) int
	// SyncLog makes the stored session equal h plus events (Reconcile
	// decides): it returns one of the Import* outcomes and how many
	// events it added.
	SyncLog(h core.SessionHeader, events []core.Event, source string, replace bool) (outcome string, added int, err error)
	// PutSource stores where session id came from (core.SourceInfo).
	PutSource(id string, info core.SourceInfo) error
	// RevokeShares revokes the share links of session id, returning how
	// many.
	RevokeShares(id string) (int, error)
	// PutNotes stores the notes an import keeps beside session id's log
	// (SideNotes); a note already stored (by id) is left as it is.
	PutNotes(id string, ns []SideNote) error
}

// ImportPlan is an import checked before its transaction: the file's
// logs prepared (PrepareLog), renamed by ImportOptions.As, their families
// free of cycles.
type ImportPlan struct {
	file     string
	preps    []Prepared
	original string // the renamed session's id in the file ("" when not renamed)
	replace  bool
	inFile   map[string]bool
}

// PlanImport checks and prepares the logs of file for an import with
// options o; nothing is written yet.
func PlanImport(file string, logs []*dsh.Log, o ImportOptions) (*ImportPlan, error) {
	logs, original, err := o.Rename(file, logs)
	if err != nil {
		return nil, err
	}
	p := &ImportPlan{file: file, original: original, replace: o.Replace, inFile: map[string]bool{}}
	for _, l := range logs {
		prep, err := PrepareLog(file, l)
		if err != nil {
			return nil, err
		}
		p.preps = append(p.preps, prep)
	}
	if err := CheckFamilyCycles(file, logs); err != nil {
		return nil, err
	}
	for _, prep := range p.preps {
		p.inFile[prep.Log.Header.ID] = true
	}
	return p, nil
}

// Prepared returns the plan's logs as Run writes them (crash repair
// appended), in file order, for what an engine derives from them before
// its transaction. They must not be changed.
func (p *ImportPlan) Prepared() []Prepared { return p.preps }

// IDs returns the ids of the plan's sessions, in file order.
func (p *ImportPlan) IDs() []string {
	ids := make([]string, len(p.preps))
	for i, prep := range p.preps {
		ids[i] = prep.Log.Header.ID
	}
	return ids
}

// Run writes the plan through t, inside the engine's one transaction:
// every parent checked first (CheckParent), then per session its log
// (ImportCreated, ImportUnchanged, ImportExtended or ImportReplaced), its
// source, the revocation of a replaced session's share links and its side
// notes. An error names the file and entry; the engine rolls back. Run
// may run again if the engine retries the transaction.
func (p *ImportPlan) Run(t ImportTx) ([]ImportResult, error) {
	for _, prep := range p.preps {
		if err := CheckParent(p.file, prep.Log, p.inFile, t.Exists); err != nil {
			return nil, err
		}
	}
	var results []ImportResult
	for _, prep := range p.preps {
		h := prep.Log.Header
		revoked, before := 0, t.Before(h.ID)
		outcome, added, err := t.SyncLog(h, prep.Events, SourceImport, p.replace)
		if err == nil && prep.Log.Source != nil {
			err = t.PutSource(h.ID, *prep.Log.Source)
		}
		if err == nil && outcome == ImportReplaced {
			revoked, err = t.RevokeShares(h.ID)
		}
		if err == nil {
			var ns []SideNote
			ns, err = SideNotes(h.ID, prep.Log, p.original != "")
			if err == nil && len(ns) > 0 {
				err = t.PutNotes(h.ID, ns)
			}
		}
		if err != nil {
			where := p.file
			if prep.Log.Entry != "" {
				where += ": " + prep.Log.Entry
			}
			return nil, fmt.Errorf("import %s: %w", where, err)
		}
		results = append(results, ImportResult{SessionID: h.ID, ParentID: h.ChildOf(), Entry: prep.Log.Entry, Outcome: outcome,
			Events: len(prep.Events), Added: added, Repaired: prep.Repaired, Torn: prep.Log.Torn, Kept: prep.Log.Notes, Revoked: revoked,
			Original: p.original, Before: before})
	}
	return results, nil
}

// Done follows a committed import: it logs what the import did
// (LogImported) and writes the subagent links it infers
// (WriteInferredLinks) through st; a link that cannot be written is
// logged, the sessions stay.
func (p *ImportPlan) Done(ctx context.Context, log *slog.Logger, st NoteWriter, results []ImportResult) {
	LogImported(ctx, log, p.file, results)
	if _, err := WriteInferredLinks(ctx, st, p.preps); err != nil {
		log.Warn("inferred subagent links", logkey.File, p.file, logkey.Err, err)
	}
}

// FileImport is one file's outcome in a batch import (BatchImporter): its
// sessions, or why nothing of it was kept.
type FileImport struct {
	Results []ImportResult
	Err     error
}

// StoreFailed is the outcome of each file of a batch import
// (BatchImporter) that ended because the store failed — the disk full,
// the database read-only, locked or corrupt, the store closing, the
// commit refused — which is no file's fault: the batch
// stopped at once and nothing of it was kept. Err is the store's error
// (core.ErrorCode reads through it); the file may import once the store
// works again.
type StoreFailed struct{ Err error }

func (e *StoreFailed) Error() string { return "not imported, the store failed: " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *StoreFailed) Unwrap() error { return e.Err }

// BatchImporter is an engine that imports several files in one
// transaction (prism import's bulk path): each file is decoded and
// checked as ImportFileWith checks it, then written inside a savepoint of
// its own, so a file that fails there is rolled back to it — nothing of
// it is kept — while the files around it commit. Its files are in one
// commit: once ImportFilesWith returns, every file it reports imported
// is committed (durably unless ImportOptions.Relaxed). A failure that is
// the store's, not a file's (a failed commit too), ends the batch at once
// and fails every file it held with a *StoreFailed, none of them kept.
// ImportOptions.Turn and Queued apply to the
// batch's one transaction; As needs a batch of one file. The outcomes
// are in paths' order.
type BatchImporter interface {
	ImportFilesWith(ctx context.Context, paths []string, o ImportOptions) []FileImport
}
