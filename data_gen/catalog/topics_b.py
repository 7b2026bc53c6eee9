"""Catalog topics, part B: customer data retention, remote work days, travel booking notice, parental leave and
mileage reimbursement.

Why this module is long: it is text data (one Topic per block, five topics a file), not logic."""

from .base import Scope, Topic

CUSTOMER_DATA_RETENTION = Topic(
    key="customer_data_retention",
    title="Customer Data Retention Policy",
    runbook_title="Snowflake Customer Data Purge Runbook",
    topic="customer data retention period",
    phrase="{n} months",
    values=(6, 12, 18, 24, 36, 48, 60, 84),
    scopes=(
        Scope("consumer", "consumer account holders", "Consumer Account Holders"),
        Scope("enterprise", "enterprise customers", "Enterprise Customers"),
        Scope("eu", "customers in the European Union", "Customers in the European Union"),
        Scope("trial", "free trial users", "Free Trial Users"),
        Scope("leads", "marketing leads", "Marketing Leads"),
    ),
    fact=(
        "Personal data about {who} is kept for {v} after the account is closed and is then deleted or anonymised,"
        " as described in section {section}.",
        "Once the relationship ends, records belonging to {who} may be retained for no longer than {v}; this rule"
        " took effect with the version published on {date}.",
        "The retention period for {who} is {v}, counted from the day the account closes, and it applies to every"
        " production store listed on form {form}.",
        "Under the {doc}, data held on {who} is purged or anonymised {v} after account closure; the decision"
        " record is filed as {ticket}.",
        "Data stores holding details of {who} must not keep them beyond {v} after the account ends, and about"
        " {headcount} closed accounts reach that limit each quarter.",
        "For {who}, the {topic} is {v} from the closure date; a store that cannot meet it is reported to the"
        " privacy desk at extension {ext}.",
    ),
    scope=(
        "This policy covers profiles, contact details and usage logs of {who} in production databases, the"
        " analytics warehouse and exported spreadsheets (section {section}).",
        "Invoices kept for tax law and anything under a legal hold are exempt for {who} until the hold is"
        " lifted; open legal holds are logged under {ticket}.",
        "The rules apply to every system that holds details of {who}, about {headcount} accounts in all,"
        " including backups, support tools and mailing lists.",
        "Anonymised statistics about {who} that can no longer identify a person fall outside the {doc}, as"
        " confirmed in the revision of {date}.",
        "Vendors that process data about {who} on our behalf must follow the same rules, and their contracts"
        " reference the data processing annex on form {form}.",
    ),
    procedure=(
        "Each team that manages a system used by {who} registers it with the Privacy Office on form {form}"
        " and names an owner who answers for its clean-up.",
        "Erasure requests from {who} that arrive before the period ends go through the privacy request workflow"
        " and are completed within {days} working days.",
        "Owners of systems holding records of {who} confirm each quarter that the purges ran, by attaching the"
        " job logs to the standing request {ticket}.",
        "To ask for an exception for {who}, describe the legal basis in a request to the Privacy Office and wait"
        " for written approval, following section {section}.",
        "Before a new tool goes live for {who}, its team books a privacy review in room {room} and completes"
        " the launch checklist in section {section}.",
    ),
    contacts=(
        "The Privacy Office owns the {doc}; send questions about data on {who} to the #privacy channel or call"
        " the privacy desk at extension {ext}.",
        "The Data Protection Officer reviews the rules for {who} each year; the latest review was completed on"
        " {date} and is recorded under {ticket}.",
        "For urgent incidents affecting {who}, page the platform on-call engineer first and then escalate to"
        " the privacy lead at extension {ext}.",
        "Privacy office hours for teams handling data on {who} are held every Thursday afternoon in room {room},"
        " and no booking is needed.",
        "Audit findings about records of {who} are reported to the Privacy Office with form {form}, and the"
        " privacy committee reviews them every quarter.",
    ),
    runbook_step=(
        "In Snowflake, open the purge task for {who} and set its retention parameter so closed accounts are"
        " deleted after {v}, then resume the task under {ticket}.",
        "Run ALTER TASK on the purge schedule for {who} with the retention window set to {v} after closure, and"
        " note the change in section {section} of the change log.",
        "Update the row for {who} in the Snowflake retention settings table to {v}, then redeploy the purge"
        " procedure on the date the policy was published, {date}.",
        "Edit the Snowflake purge procedure parameters for {who} so that rows older than {v} past closure are"
        " removed, and record the new setting on form {form}.",
        "Set the closed-account lifecycle rule for {who} in the Snowflake governance schema to {v}; the change"
        " affects about {headcount} closed accounts.",
    ),
    runbook_prereq=(
        "Access requires the warehouse engineer role plus written sign-off from the Privacy Office, filed"
        " under {ticket}, before any change for {who} is made.",
        "Clone the customer tables for {who} before editing anything, so that a mistaken change can be"
        " rolled back within {days} working days.",
        "Approval from the data owner for {who} must be recorded on form {form}, and the change window must be"
        " announced in the #data-platform channel.",
        "Check that the system register in section {section} lists every Snowflake schema that contains"
        " accounts of {who} before you begin the change.",
        "A second engineer must review the purge change for {who}; arrange the review with the platform team at"
        " extension {ext} ahead of the change window.",
    ),
    runbook_verify=(
        "After the next run, query the Snowflake tables for accounts of {who} that ended before the cutoff"
        " and expect an empty result; note it in {ticket}.",
        "Open the scheduled run history for {who} and confirm the latest run succeeded with the new"
        " settings, then attach a screenshot to form {form}.",
        "Compare the row counts for {who} before and after the run; the difference must match the account"
        " closures report, around {headcount} entries.",
        "Ask the Privacy Office to spot-check a sample of removed accounts of {who} within {days} working"
        " days and sign the check in section {section} of the log.",
        "Confirm that the Snowflake alert for failed purge runs on {who} is still enabled, and report any failure"
        " to the on-call engineer at extension {ext}.",
    ),
    questions=(
        "How long do we keep data on {who} after their account closes?",
        "What is the current retention period for {who}?",
        "When does personal data of {who} have to be deleted?",
        "How many months can we hold records about {who}?",
        "Retention limit for {who}?",
        "Once an account is closed, how long are we allowed to store information belonging to {who} before it"
        " must be purged?",
        "What's the rule today on keeping personal details of {who}?",
        "For how long may the company retain the files of {who} under the privacy rules in force?",
        "Is there a maximum storage time for data about {who}, and what is it now?",
        "How soon after churn do we need to erase everything we hold on {who}?",
    ),
    historical_questions=(
        "What was the retention period for {who} on {date}?",
        "As of {date}, how long could we keep data about {who} after closure?",
        "On {date}, how many months of retention applied to records of {who}?",
    ),
    dependent_questions=(
        "What retention window should the Snowflake purge task use for {who}?",
        "How should the retention parameter be set in Snowflake for {who}?",
        "Which deletion delay do I configure in the Snowflake lifecycle job for {who}?",
        "After how long should Snowflake remove closed-account rows of {who}?",
    ),
)

REMOTE_WORK_DAYS = Topic(
    key="remote_work_days",
    title="Hybrid Working Policy",
    runbook_title="Envoy Hybrid Schedule Configuration Runbook",
    topic="remote work allowance",
    phrase="{n} days per month",
    values=(2, 4, 6, 8, 10, 12, 14, 16),
    scopes=(
        Scope("engineers", "software engineers", "Software Engineers"),
        Scope("support", "customer support agents", "Customer Support Agents"),
        Scope("london", "employees in the London office", "Employees in the London Office"),
        Scope("finance", "finance and accounting staff", "Finance and Accounting Staff"),
        Scope("account_managers", "account managers", "Account Managers"),
    ),
    fact=(
        "Under the {doc}, {who} may work from home for up to {v}, agreed with their manager in advance, as set"
        " out in section {section}.",
        "The remote work allowance for {who} is {v}; remote days are booked in Envoy and confirmed by the team"
        " lead at least {days} working days ahead.",
        "From the version published on {date}, the limit on home working for {who} is {v}, and any unused days"
        " lapse at the end of the month.",
        "Managers may approve remote work of up to {v} for {who}; anything above that limit needs a business case"
        " filed under {ticket}.",
        "Each month, {who} are entitled to {v} away from the office, recorded in Envoy so that desk planning for"
        " about {headcount} people stays accurate.",
        "For {who}, the {topic} is {v}; days at client sites or on business travel do not count toward it and are"
        " logged separately on form {form}.",
    ),
    scope=(
        "This document covers {who} on standard office contracts; fully distributed contracts and site-based"
        " roles follow the separate terms in section {section}.",
        "Working from another country is not part of the allowance for {who} and needs a separate approval from"
        " HR and Legal on form {form}.",
        "New joiners among {who} are expected in the office daily for their first {days} business days;"
        " overall about {headcount} people are covered.",
        "Temporary arrangements for {who}, such as medical or caring adjustments, are handled outside this"
        " allowance through the HR case {ticket}.",
        "Office closures and public holidays do not reduce the allowance for {who}; the list of recognised"
        " closures was last updated on {date}.",
    ),
    procedure=(
        "Plan office attendance in Envoy before the first Monday and respect the team anchor dates, which"
        " for {who} are listed in section {section}.",
        "Requests by {who} to change an agreed pattern must reach the manager at least {days} business days"
        " in advance and are then updated in the booking tool.",
        "Unused remote days of {who} cannot be carried over, and managers may ask for office presence at planning"
        " events held in room {room}.",
        "If {who} need a longer remote period for personal reasons, submit form {form} to HR with the manager's"
        " support before the period starts.",
        "Team leads review the monthly booking report for {who} and record repeated breaches in the HR case"
        " {ticket} for follow-up.",
    ),
    contacts=(
        "People Operations owns the {doc}; questions from {who} go to the #ask-people channel or to the HR desk"
        " at extension {ext}.",
        "Workplace Services reviews the hybrid rules for {who} every year, and the most recent review was signed"
        " off on {date}.",
        "Disputes about home working for {who} escalate first to the department head and then to the HR business"
        " partner at extension {ext}.",
        "Drop-in sessions on office attendance for {who} are held every first Monday in room {room}, run by"
        " Workplace Services.",
        "Feedback on the hybrid rules from {who} can be logged with form {form}; People Operations reads every"
        " submission before the annual review.",
    ),
    runbook_step=(
        "In the Envoy admin dashboard, open Hybrid Work settings, select the group for {who} and set the monthly"
        " remote quota to {v}; publish under {ticket}.",
        "Edit the Envoy schedule policy that applies to {who} so that remote bookings are capped at {v}, and"
        " record the change in section {section} of the log.",
        "Set the remote day limit on the Envoy work policy for {who} to {v} and apply it to all {headcount}"
        " employee profiles in that group.",
        "Using the Envoy API, update the remote_days_quota field for {who} to {v}, then attach the request and"
        " the response to form {form}.",
        "In Envoy, change the hybrid allowance rule for {who} to {v} and set its effective date to the policy"
        " publication date, {date}.",
    ),
    runbook_prereq=(
        "You need the Envoy Global Admin role and written approval from People Operations, logged under {ticket},"
        " before changing settings for {who}.",
        "Export the existing Envoy settings for {who} and attach the export to form {form} before making any"
        " change, so that a rollback is possible.",
        "Confirm with Workplace Services that desk capacity for {who} has been rechecked at least {days}"
        " business days before the change is released.",
        "Check that the Envoy group membership for {who} matches the HR roster of about {headcount} people, so"
        " that the new rule reaches everyone.",
        "Announce the change window to the workplace team at extension {ext} and agree a rollback plan with the"
        " Envoy owner for {who}.",
    ),
    runbook_verify=(
        "Sign in to Envoy as a test user from {who} and attempt an extra booking beyond the permitted"
        " amount; a warning must appear. Record the result in {ticket}.",
        "Check the Envoy audit log for the hybrid settings change on {who} and confirm that it shows the approver"
        " named on form {form}.",
        "Run the Envoy bookings report for {who} after {days} business days and confirm that no entry in the"
        " period exceeds the new setting.",
        "Ask a team lead of {who} to confirm in writing that the schedule view matches the policy, and file the"
        " confirmation in section {section}.",
        "Confirm the Envoy sync to the HR system still runs for {who} and that all {headcount} profiles show the"
        " new rule; report issues to extension {ext}.",
    ),
    questions=(
        "How many days a month can {who} work from home?",
        "What is the monthly remote work allowance for {who}?",
        "WFH limit for {who}?",
        "How often are {who} allowed to work remotely these days?",
        "Under the hybrid rules, how many days away from the office do {who} get each month?",
        "What is the current cap on home working for {who}?",
        "I'm one of the {who}; how many remote days can I book per month?",
        "Can you tell me the number of remote days per month currently granted to {who}?",
        "How much of the month may {who} spend working outside the office?",
        "What's the hybrid working quota for {who} right now?",
    ),
    historical_questions=(
        "How many remote work days per month did {who} have on {date}?",
        "What was the home working limit for {who} as of {date}?",
        "On {date}, how often could {who} work from home each month?",
    ),
    dependent_questions=(
        "What monthly remote day quota should Envoy enforce for {who}?",
        "Which remote work limit do I set in the Envoy schedule policy for {who}?",
        "How many remote days per month should Envoy let {who} book?",
        "What value goes into the Envoy remote_days_quota field for {who}?",
    ),
)

TRAVEL_BOOKING_NOTICE = Topic(
    key="travel_booking_notice",
    title="Business Travel Booking Policy",
    runbook_title="Navan Travel Policy Configuration Runbook",
    topic="travel booking lead time",
    phrase="{n} days",
    values=(3, 5, 7, 10, 14, 21, 28, 35),
    scopes=(
        Scope("field_sales", "field sales representatives", "Field Sales Representatives"),
        Scope("consultants", "consultants on client projects", "Consultants on Client Projects"),
        Scope("apac", "employees in the Asia Pacific region", "Employees in the Asia Pacific Region"),
        Scope("executives", "senior executives", "Senior Executives"),
        Scope("new_hires", "new hires travelling to onboarding", "New Hires Travelling to Onboarding"),
    ),
    fact=(
        "Flights and hotels for {who} must be booked at least {v} before departure, unless the trip is approved"
        " as urgent under section {section}.",
        "The {topic} for {who} is {v}; bookings made later than that are flagged in Navan and need approval on"
        " form {form}.",
        "As of the revision dated {date}, {who} have to reserve business travel no less than {v} ahead of the"
        " departure date.",
        "Business trips taken by {who} are booked through Navan {v} or more before the outbound flight, and late"
        " bookings are reported under {ticket}.",
        "Finance requires {who} to complete every travel booking a minimum of {v} before leaving, which keeps"
        " fares in budget for about {headcount} trips a year.",
        "For {who}, travel must be booked with at least {v} of notice before departure; short-notice exceptions"
        " are approved by the travel desk at extension {ext}.",
    ),
    scope=(
        "These rules cover {who} whenever the company pays for air fares, accommodation or rail, as listed"
        " in section {section} of the handbook.",
        "Trips paid for by a client and local taxi rides are outside these rules for {who}; client-paid travel"
        " is recorded on form {form}.",
        "About {headcount} travellers are covered by this document, including {who} and any contractors"
        " whose expenses the company pays.",
        "Conference travel for {who} follows the same rules, but events booked by the Events team are handled"
        " under the agreement {ticket}.",
        "Emergency travel for {who}, such as a customer outage or a family emergency abroad, is exempt; the"
        " exemption list was revised on {date}.",
    ),
    procedure=(
        "Use the company portal for every itinerary so it is checked automatically; {who} who pay on other"
        " sites are not reimbursed, as stated in section {section}.",
        "For urgent journeys that cannot meet the standard, {who} obtain written approval from the"
        " department head on form {form} before paying anything.",
        "Managers approve itinerary requests from {who} within {days} working days, after which the request"
        " is released to the agency.",
        "If {who} must change an itinerary, contact the travel desk at extension {ext} rather than amending"
        " it yourself, so that any change fee is tracked.",
        "Group journeys of {who} for training or offsites are arranged by the team coordinator, who logs the"
        " group reservation under {ticket}.",
    ),
    contacts=(
        "The Travel team in Finance owns the {doc}; {who} can ask questions in the #travel channel or call the"
        " travel desk at extension {ext}.",
        "Finance Operations reviews the booking rules for {who} every fiscal year, and the most recent review was"
        " approved on {date}.",
        "Escalations about blocked bookings for {who} go to the travel lead first and then to the Finance"
        " controller, tracked in {ticket}.",
        "Travel clinics for {who} run every second Wednesday in room {room}, where the travel desk helps with"
        " complex itineraries.",
        "Complaints about the travel agency from {who} are filed with form {form} and discussed by the Travel"
        " team at its monthly supplier meeting.",
    ),
    runbook_step=(
        "In the Navan admin console, open the travel policy for {who} and set the minimum advance booking to {v};"
        " record the change under {ticket}.",
        "Edit the out-of-policy rule for the traveller group of {who} so that bookings made less than {v} before"
        " departure need approval, per section {section}.",
        "Set the advance purchase threshold in Navan to {v} for {who}, and confirm the rule applies to all"
        " {headcount} traveller profiles in that group.",
        "Using the Navan policy editor, change the lead time condition for {who} to {v}, then save it with the"
        " effective date {date}.",
        "Update the Navan booking window for {who} to {v} before departure, and copy the new setting into the"
        " policy register on form {form}.",
    ),
    runbook_prereq=(
        "Before editing settings for {who}, obtain the Navan admin role and sign-off from the Finance"
        " expense manager, logged under {ticket}.",
        "Export the existing Navan configuration for {who} and attach the file to form {form}, so that the"
        " previous settings can be restored if anything goes wrong.",
        "Notify the travel agency account team at least {days} working days before the change, since their"
        " agents also check bookings by {who}.",
        "Check that the Navan traveller group for {who} matches the HR roster of roughly {headcount} people"
        " before applying any rule change.",
        "Agree the change window with the travel desk at extension {ext} and make sure no bulk bookings for {who}"
        " are in progress.",
    ),
    runbook_verify=(
        "Search for a fare in Navan as a test traveller from {who}, choosing a date too soon to pass, and"
        " confirm it is flagged; log the result in {ticket}.",
        "Review the Navan change history for {who} and confirm the updated entry shows the approver recorded"
        " on form {form}.",
        "After {days} working days, run the compliance report for {who} and check that late entries are"
        " flagged as expected.",
        "Ask one traveller from {who} to place a refundable test reservation with the desk at extension"
        " {ext}, then cancel it once the check is shown.",
        "Compare the Navan export for {who} with section {section} of the {doc} and confirm that the two"
        " state the same figure.",
    ),
    questions=(
        "How far in advance do {who} need to book business travel?",
        "What is the minimum booking notice for trips by {who}?",
        "Booking lead time for {who}?",
        "How many days before departure must {who} reserve flights and hotels?",
        "I'm among the {who}; how early should I book a work trip to stay within policy?",
        "What advance booking rule currently applies to {who}?",
        "When is the latest that {who} can book a business trip without needing an exception?",
        "How much notice does the travel policy require from {who} for flights?",
        "For {who}, how early do hotel and flight reservations have to be made these days?",
        "What's the current deadline ahead of departure for {who} to get travel booked?",
    ),
    historical_questions=(
        "How far ahead did {who} have to book travel on {date}?",
        "What was the booking lead time for {who} as of {date}?",
        "On {date}, how many days before departure were {who} required to book trips?",
    ),
    dependent_questions=(
        "What advance booking window should Navan enforce for {who}?",
        "Which lead time does the Navan out-of-policy rule need for {who}?",
        "How should the advance purchase threshold be set in Navan for {who}?",
        "What minimum booking notice do I configure in Navan for {who}?",
    ),
)

PARENTAL_LEAVE = Topic(
    key="parental_leave",
    title="Parental Leave Policy",
    runbook_title="Workday Parental Leave Absence Plan Runbook",
    topic="paid parental leave",
    phrase="{n} weeks",
    values=(4, 6, 8, 10, 12, 16, 20, 26),
    scopes=(
        Scope("birth_parents", "birth parents", "Birth Parents"),
        Scope("non_birth_parents", "non-birth parents", "Non-Birth Parents"),
        Scope("adoptive", "adoptive and foster parents", "Adoptive and Foster Parents"),
        Scope("us", "employees in the United States", "Employees in the United States"),
        Scope("part_time", "part-time employees", "Part-Time Employees"),
    ),
    fact=(
        "Under the {doc}, {who} receive {v} of paid parental leave at full salary, as set out in section"
        " {section}.",
        "The paid parental leave entitlement for {who} is {v}, taken in one block or in parts within the first"
        " year and booked on form {form}.",
        "From the revision published on {date}, {who} are entitled to {v} of leave on full pay when a child joins"
        " the family.",
        "Paid leave for {who} welcoming a new child lasts {v}; pay continues through normal payroll, and"
        " questions go to extension {ext}.",
        "The company grants {who} {v} of paid parental leave for each birth or adoption, and around {headcount}"
        " employees took this leave last year.",
        "For {who}, the {topic} is {v} at full salary, granted on top of any statutory leave as confirmed in the"
        " legal opinion {ticket}.",
    ),
    scope=(
        "The policy covers {who} who have completed probation, regardless of gender, for births, adoptions and"
        " surrogacy; see section {section}.",
        "Contractors and agency workers are not eligible, but {who} on fixed-term contracts longer than one year"
        " are, as clarified on {date}.",
        "About {headcount} people are covered in total, including {who} who join the company while already"
        " expecting a child.",
        "Where local law gives {who} more generous statutory time, the statutory rules prevail, as recorded"
        " in the legal note {ticket}.",
        "Leave for {who} after a stillbirth or pregnancy loss is handled with the same care and pay; requests go"
        " on form {form} and stay confidential.",
    ),
    procedure=(
        "Requests from {who} are submitted in the HR portal at least {days} working days before the start"
        " date, together with a handover note for the team.",
        "Attach the birth certificate or placement papers to form {form} within a month of the birth or"
        " placement, so that salary for {who} continues without a gap.",
        "To split the leave into parts, {who} submit each part separately in Workday and share the dates with"
        " the manager, as section {section} explains.",
        "Keeping-in-touch days for {who} are optional and paid; book them with HR through the case {ticket} so"
        " that they do not reduce the entitlement.",
        "Before coming back, {who} can meet the HR partner in room {room} to discuss flexible hours, a phased"
        " return and childcare support.",
    ),
    contacts=(
        "People Operations owns the {doc}; {who} can ask questions privately through the HR help desk at"
        " extension {ext}.",
        "The Benefits team reviews leave pay for {who} every year, and the latest review of the policy was"
        " completed on {date}.",
        "If a leave request from {who} is delayed, escalate to the HR business partner and then to the Head of"
        " Benefits, quoting {ticket}.",
        "Parents' network meetings for {who} take place monthly in room {room}, and the Benefits team attends to"
        " answer questions.",
        "Payroll questions about leave pay for {who} go to the payroll team on form {form}, and replies are sent"
        " within the same week.",
    ),
    runbook_step=(
        "In Workday, open the Parental Leave absence plan for {who} and set the maximum paid duration to {v},"
        " then save it under change {ticket}.",
        "Edit the eligibility rule of the leave of absence type for {who} so that it grants {v} of paid leave per"
        " child, per section {section}.",
        "Set the paid entitlement in the Workday time off plan for {who} to {v}, and apply it to all {headcount}"
        " eligible worker records.",
        "Using the Workday business process editor, change the leave limit for {who} to {v} with an effective"
        " date of {date}.",
        "Update the Workday absence plan calculation for {who} to {v} at full salary, and record the old and new"
        " settings on form {form}.",
    ),
    runbook_prereq=(
        "You need the Workday Absence Partner security role and a change request approved by Benefits, logged as"
        " {ticket}, before editing plans for {who}.",
        "Export the existing Workday settings for {who} and attach the file to form {form} before making any"
        " change, so that they can be restored.",
        "Tell payroll at least {days} working days ahead, since the change for {who} affects the next payroll run"
        " and its audit checks.",
        "Check the eligible population for {who} with HR analytics, roughly {headcount} workers, so that"
        " nobody is missed when the change is applied.",
        "Book the change window with the HRIS team at extension {ext} and make sure no leave requests from {who}"
        " are pending approval.",
    ),
    runbook_verify=(
        "Submit a test request in the Workday sandbox for a sample worker from {who} and check the approved"
        " end date; note the outcome in {ticket}.",
        "Run the Workday balances report for {who} who are currently away and check that their end dates"
        " were recalculated, then sign form {form}.",
        "After {days} working days, ask payroll to verify that salary for {who} in the next run matches the"
        " configured settings.",
        "Compare the Workday export for {who} with section {section} of the {doc} and check that both state"
        " the same figure.",
        "Check the Workday audit trail for the plan change on {who} and report any unexpected edits to the HRIS"
        " team at extension {ext}.",
    ),
    questions=(
        "How many weeks of paid parental leave do {who} get?",
        "What is the parental leave entitlement for {who}?",
        "Parental leave for {who}, how long is it now?",
        "How long can {who} take off on full pay after having a child?",
        "A baby is on the way and I'm one of the {who}; how much paid leave am I entitled to?",
        "What's the current length of fully paid leave for {who} when a child arrives?",
        "How much paid time off do {who} receive after a birth or adoption?",
        "Could you confirm how long paid maternity or paternity leave lasts for {who}?",
        "For {who}, what does the company offer today in paid leave for new parents?",
        "How long is the fully paid break from work given to {who} who become parents?",
    ),
    historical_questions=(
        "How many weeks of paid parental leave did {who} get on {date}?",
        "What was the parental leave entitlement for {who} as of {date}?",
        "On {date}, how long was paid leave for {who} after a new child arrived?",
    ),
    dependent_questions=(
        "What maximum paid duration should the Workday parental leave plan have for {who}?",
        "How many weeks should Workday grant {who} for a birth or adoption?",
        "Which entitlement do I enter in the Workday absence plan for {who}?",
        "What leave limit goes into the Workday time off plan for {who}?",
    ),
)

MILEAGE_REIMBURSEMENT = Topic(
    key="mileage_reimbursement",
    title="Mileage Reimbursement Policy",
    runbook_title="SAP Concur Mileage Rate Configuration Runbook",
    topic="mileage reimbursement rate",
    phrase="{n} cents per mile",
    values=(45, 50, 54, 58, 62, 65, 67, 70),
    scopes=(
        Scope("field_service", "field service technicians", "Field Service Technicians"),
        Scope("sales", "regional sales managers", "Regional Sales Managers"),
        Scope("electric", "employees driving electric cars", "Employees Driving Electric Cars"),
        Scope("california", "employees in California", "Employees in California"),
        Scope("home_care", "home care nurses", "Home Care Nurses"),
    ),
    fact=(
        "When {who} drive a personal vehicle on company business, they are reimbursed at {v}, as set out in"
        " section {section} of the {doc}.",
        "The {topic} for {who} is {v} for every business mile logged in Concur, and claims are filed within"
        " {days} working days of the trip.",
        "From the version published on {date}, business driving in private cars by {who} is paid at {v}, which"
        " covers fuel, wear and insurance.",
        "Mileage claimed by {who} is paid at {v}; commuting between home and the usual workplace is excluded, as"
        " recorded in {ticket}.",
        "Expense reports from {who} are reimbursed at {v} for business driving, a rate that applies to about"
        " {headcount} drivers across the company.",
        "For {who}, each business mile driven in a personal vehicle earns {v}; the amount is paid through payroll"
        " and explained on form {form}.",
    ),
    scope=(
        "The policy covers {who} driving a private car, van or motorcycle on approved trips; pool cars and"
        " rentals fall under section {section} instead.",
        "Commuting is not reimbursable for {who}, but trips from home straight to a client site are, as clarified"
        " in the guidance of {date}.",
        "About {headcount} drivers fall under the policy, including {who} and temporary staff who hold a valid"
        " licence and insurance.",
        "Passenger supplements and parking fees for {who} are handled separately, and tolls are claimed with"
        " receipts on form {form}.",
        "Drivers among {who} must hold insurance that covers commercial journeys; uninsured trips are"
        " excluded, per the risk review {ticket}.",
    ),
    procedure=(
        "Log each trip in Concur with start address, end address and purpose; {who} submit mileage claims within"
        " {days} working days after the month ends.",
        "Managers approve the mileage claims of {who} in Concur and may ask for a route map, returning unclear"
        " claims with a note citing section {section}.",
        "To register for driving claims, {who} upload proof of insurance and licence with form {form} once a"
        " year, before the first trip is submitted.",
        "If {who} share a car for a trip, only the driver claims mileage and the passengers are named in the"
        " comment field, as agreed in {ticket}.",
        "Unusually long drives by {who} need pre-approval from the cost centre owner, who can be reached at"
        " extension {ext} during office hours.",
    ),
    contacts=(
        "The Expenses team in Finance owns the {doc}; {who} can ask about mileage claims in the #expenses channel"
        " or call extension {ext}.",
        "Finance reviews the mileage rules for {who} against fuel prices every year, and the latest review closed"
        " on {date}.",
        "Disputes over rejected claims by {who} go from the manager to the Expenses lead and then to the Finance"
        " controller, tracked in {ticket}.",
        "Expense clinics for {who} are held in room {room} on the last Friday of each month, and no booking is"
        " needed to attend.",
        "Suggestions from {who} about the mileage rules can be sent with form {form}, and the Expenses team"
        " replies within the month.",
    ),
    runbook_step=(
        "In SAP Concur, open Expense Configuration, select the mileage rate table for {who} and set the personal"
        " car rate to {v}; log it in {ticket}.",
        "Add a new rate row for {who} to the Concur personal car mileage table with a value of {v} and an"
        " effective date of {date}.",
        "Edit the Concur vehicle rate for {who} to {v} and make sure the rule is assigned to all {headcount}"
        " employee profiles in that group.",
        "Using the Concur configuration API, update the reimbursement rate for {who} to {v}, and attach the"
        " response to form {form}.",
        "Set the Concur mileage rate of the policy group for {who} to {v}, then run the rate sync described in"
        " section {section} of this runbook.",
    ),
    runbook_prereq=(
        "You need the Concur configuration administrator role and approval from the Finance lead, logged as"
        " {ticket}, before changing settings for {who}.",
        "Export the existing Concur settings for {who} and attach the file to form {form}, so that the"
        " previous configuration can be restored.",
        "Notify payroll at least {days} working days before the change, since driving claims from {who} are"
        " settled in the monthly payroll run.",
        "Confirm with HR that the Concur policy group for {who} matches the roster of about {headcount}"
        " people before editing anything.",
        "Agree the change window with the Concur support team at extension {ext} and check that no claims from"
        " {who} are stuck in approval.",
    ),
    runbook_verify=(
        "Create a test report in the Concur sandbox as a user from {who} with a short trip and confirm the"
        " new figure is calculated; record it in {ticket}.",
        "Check the Concur audit log for the change on {who} and confirm that the approver matches the name"
        " on form {form}.",
        "After {days} working days, review the driving claims of {who} settled in that period and confirm"
        " they were calculated with the new figure.",
        "Compare the Concur export for {who} with section {section} of the {doc} and confirm that both show"
        " the same figure.",
        "Ask a volunteer among {who} to submit a real journey and confirm with the Finance team at extension"
        " {ext} that the payout was correct.",
    ),
    questions=(
        "What mileage rate do {who} get for driving their own car?",
        "How much are {who} reimbursed per business mile?",
        "Mileage rate for {who}?",
        "If I'm one of the {who} and use my own car for work, how many cents a mile do I get back?",
        "What is the current per-mile allowance for {who}?",
        "How much does the company pay {who} for each mile driven on company business?",
        "When {who} claim car travel in expenses, which rate per mile applies today?",
        "What's the reimbursement for business driving by {who} at the moment?",
        "Could you tell me the mileage allowance currently paid to {who}?",
        "How many cents per mile can {who} put on an expense claim?",
    ),
    historical_questions=(
        "What mileage rate applied to {who} on {date}?",
        "How much per mile were {who} reimbursed as of {date}?",
        "On {date}, what was the business mileage allowance for {who}?",
    ),
    dependent_questions=(
        "What personal car rate should be set in SAP Concur for {who}?",
        "Which per-mile rate do I enter in the Concur mileage table for {who}?",
        "How should the Concur vehicle rate be configured for {who}?",
        "What value goes into the Concur mileage rate row for {who}?",
    ),
)

TOPICS: tuple[Topic, ...] = (
    CUSTOMER_DATA_RETENTION,
    REMOTE_WORK_DAYS,
    TRAVEL_BOOKING_NOTICE,
    PARENTAL_LEAVE,
    MILEAGE_REIMBURSEMENT,
)
