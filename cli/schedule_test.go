package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/trigger"
)

func TestScheduleCommands(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	d.ok(append([]string{"workflow", "publish"}, writeDefs(t, platformtest.GreetAction, platformtest.NothingAction, platformtest.FlowWorkflow)...)...)
	d.ok("workflow", "activate", "acme/flow")
	is.Equal(d.ok("schedule", "list"), "no schedules\n")

	// create prints the schedule and its next five due times.
	out := d.ok("schedule", "create", "acme/flow", "--cron", "0 9 * * 1-5", "--set", "name=Ada")
	is.True(strings.HasPrefix(out, "Schedule "))
	is.True(strings.Contains(out, " enabled (revision 1)\n"))
	is.True(strings.Contains(out, "calendar  0 9 * * 1-5 (UTC)"))
	is.True(strings.Contains(out, "workflow  acme/flow@1 (activation "))
	is.True(strings.Contains(out, `input     {"name":"Ada"}`))
	due := strings.Split(strings.TrimSpace(out[strings.Index(out, "Next due times:\n")+len("Next due times:\n"):]), "\n")
	is.Equal(len(due), 5)
	for _, line := range due {
		at, err := time.Parse(scheduleTimeLayout, strings.TrimSpace(line))
		is.NoErr(err)
		is.Equal(at.Hour(), 9)
		is.True(at.Weekday() >= time.Monday && at.Weekday() <= time.Friday)
	}

	// A yearly schedule, so that none of its times passes while the test
	// runs (it asserts there are no occurrences yet).
	var u trigger.Upcoming
	d.okJSON(&u, "schedule", "create", "acme/flow", "--cron", "0 0 1 1 *", "--input", `{"name":"Bo"}`, "--json")
	is.Equal(u.Cron, "0 0 1 1 *")
	is.Equal(len(u.Upcoming), 5)
	for i, at := range u.Upcoming {
		is.True(at.Equal(time.Date(u.Upcoming[0].Year()+i, time.January, 1, 0, 0, 0, 0, time.UTC)))
	}

	out = d.ok("schedule", "list")
	is.True(strings.HasPrefix(out, "SCHEDULE"))
	is.True(strings.Contains(out, u.ID+"  enabled"))
	var all []trigger.Schedule
	d.okJSON(&all, "schedule", "list", "--json")
	is.Equal(len(all), 2)

	out = d.ok("schedule", "get", u.ID)
	is.True(strings.Contains(out, "Schedule "+u.ID+" enabled (revision 1)"))
	is.Equal(d.ok("schedule", "occurrences", u.ID), "no occurrences yet\n")

	// Replace, disable, enable, delete: each at the current revision.
	d.okJSON(&u, "schedule", "create", "acme/flow", "--cron", "30 8 * * *", "--set", "name=Cy", "--replace", u.ID, "--json")
	is.Equal(u.Revision, int64(2))
	out = d.ok("schedule", "disable", u.ID)
	is.Equal(out, "Schedule "+u.ID+" is disabled (revision 3)\n")
	out = d.ok("schedule", "enable", u.ID)
	is.True(strings.HasPrefix(out, "Schedule "+u.ID+" is enabled (revision 4); next due "))
	var s trigger.Schedule
	d.okJSON(&s, "schedule", "delete", u.ID, "--json")
	is.Equal(s.Status, "deleted")
	d.okJSON(&s, "schedule", "get", u.ID, "--json")
	is.Equal(s.Revision, int64(5))

	// Refusals: the API's problem, or a usage error.
	code, _, errw := d.run("schedule", "create", "acme/flow", "--cron", "0 9 * * MON")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-VALIDATION"))
	is.True(strings.Contains(errw, "day_of_week"))
	code, _, errw = d.run("schedule", "enable", u.ID, "--revision", "5")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-SCHEDULE-REVISION"))
	code, _, _ = d.run("schedule", "create", "--cron", "* * * * *")
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("schedule", "create", "acme/flow")
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("schedule", "occurrences", u.ID, "--limit", "101")
	is.Equal(code, ExitUsage)
}
